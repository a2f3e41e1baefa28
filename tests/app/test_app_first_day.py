"""A new user's first day with the app (the demo, 36 labels, History, Export, Compare): the pages speak the
screener's language, the stopping panel says what a check would cost, an early estimate too wide to mean
anything is not shown as a number, a change in History says the model is being prepared, a resumed session
shows no empty timing, Compare compares heuristics on one model, the export preview is rounded.

Through ``streamlit.testing.v1.AppTest`` on the real entry point, each test on its own SQLite database.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from app.services import DEFAULT_SOLVER, DEFAULT_STRATEGY, MarginLab
from app.services.common import answer_words
from app.services.vocabulary import heuristic_words, rule_words, solver_words
from app.ui.tables import ALC
from core import solvers, strategies
from core import stopping as rules
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import as_shown, run_comparison
from tests.app.test_app_first_start import NOTICE, spinners
from tests.app.test_app_pages import at_address, labelled

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

#: as far as the trial went: 36 labels on the demo, the default heuristic
TRIAL_LABELS = 36


def opened(db_url: str, n: int, page: str = "label"):
    """(a session on the demo answered ``n`` times as the true labels say, a new browser session showing it
    on ``page``)."""
    run = labelled(MarginLab.from_url(db_url), n=n)
    at = at_address(run.session_id)
    if page != "label":
        at.switch_page(f"views/{page}.py").run()
    assert not at.exception, at.exception
    return run, at


# --------------------------------------------------------------------------- code names


def code_names() -> list[str]:
    """What a screener must not read outside Advanced: every registered heuristic's and solver's name (but
    "random", a word), the stopping rules' code forms, and the model's own notation."""
    names = [n for n in strategies.REGISTRY.names() if n != strategies.BASELINE]
    names += list(solvers.REGISTRY.names())
    names += ["consecutive:", "statistical-run", "statistical rule", "|f|", "f(x)", "Platt"]
    return names


def test_every_registered_heuristic_solver_and_stopping_rule_has_plain_words():
    for entry in strategies.REGISTRY.entries():
        assert entry.words and heuristic_words(entry.name) == entry.words
        if entry.name != strategies.BASELINE:  # (a heuristic named in the cold start: "near-boundary (cold start)")
            assert heuristic_words(f"{entry.name} (cold start)").startswith(entry.words)
    for cold in strategies.COLD_STARTS:
        words = heuristic_words(f"{cold} (cold start)")
        assert words.startswith(strategies.COLD_START_WORDS[cold]) and "(cold start)" not in words
    assert heuristic_words(rules.CHECK_STRATEGY) == rules.CHECK_WORDS
    for entry in solvers.REGISTRY.entries():
        assert entry.words and solver_words(entry.name) == entry.words and entry.name not in entry.words
    for name in rules.RULE_NAMES:
        spec = f"{name}:50" if name == "consecutive" else name
        words = rule_words(spec)
        assert words and words != spec and "statistical" not in words and ":" not in words
    assert rule_words("consecutive:50") == "stop after 50 irrelevant in a row"


def outside_advanced(node, inside: bool = False):
    """Every element of the page that is not under an expander labelled "Advanced"."""
    if type(node).__name__ == "Expander" and str(getattr(node, "label", "")).startswith("Advanced"):
        return
    children = getattr(node, "children", None)
    if isinstance(children, dict) and children:
        for child in children.values():
            yield from outside_advanced(child)
    else:
        yield node


def shown_text(at: AppTest) -> list[str]:
    """The text a person reads on the page outside Advanced: Markdown, captions, alerts, widget labels and
    options, button labels and table cells (not tooltips)."""
    out = []
    for node in outside_advanced(at._tree):
        kind = type(node).__name__
        if kind in ("Markdown", "Caption", "Info", "Success", "Warning", "Error", "Title", "Subheader"):
            out.append(as_shown(str(node.value)))
        elif kind == "Dataframe":  # (but a column named "…, for engineers": the code names, said to be)
            frame = node.value
            frame = frame[[c for c in frame.columns if not str(c).endswith("for engineers")]]
            out += [str(c) for c in frame.columns] + [str(v) for v in frame.astype(str).to_numpy().ravel()]
        else:
            label = getattr(node, "label", None)
            if label:
                out.append(str(label))
            options = getattr(node, "options", None)
            if options:
                out += [str(o) for o in options]
    return out


def test_no_page_shows_a_code_name_after_the_trial_s_36_labels(db_url):
    run, at = opened(db_url, TRIAL_LABELS)
    found = {}
    for page in ("label", "history", "sessions", "export", "my_labels"):
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, (page, at.exception)
        text = shown_text(at)
        assert any(heuristic_words(DEFAULT_STRATEGY) in t for t in text), (page, text)  # the session's line
        found[page] = sorted({name for name in code_names() for t in text if name in t})
    assert found == {page: [] for page in found}, found


def test_the_choices_in_the_stopping_settings_are_in_words(db_url):
    run, at = opened(db_url, 4)
    picker = at.selectbox(key="stopping_rule")
    assert picker.options[:5] == [
        rule_words(r) for r in ("statistical", "knee", "margin", "stability", "consecutive:50")
    ]
    picker.select("knee")  # (the value stored stays the rule's name)
    at.button(key="FormSubmitter:stopping_settings-Apply").click().run()
    assert not at.exception, at.exception
    assert MarginLab.from_url(db_url).open_session(run.session_id).stopping_status().rule == "knee"


# --------------------------------------------------------------------------- the stopping panel


def test_a_check_that_would_read_nearly_everything_is_said_plainly(db_url):
    run = labelled(MarginLab.from_url(db_url), n=TRIAL_LABELS)
    check = run.stopping_status().check
    share = min(check.planned, check.urn) / check.urn
    assert share > rules.READ_MOST_SHARE  # (the trial's: 1,682 draws of 1,761 unlabelled items)
    at = at_address(run.session_id)
    said = [as_shown(m.value) for m in at.markdown if "Guarantee" in m.value]
    assert said == [
        f"Guarantee: a random check now would mean reading about {rules._pct(share)} of what is left "
        f"(at least {min(check.planned, check.urn):,} random draws of {check.urn:,} unlabelled items): "
        "keep labelling first; the check is suggested when the model's picks stop finding positives."
    ]


def test_the_recall_check_button_is_disabled_with_the_reason_whenever_a_check_cannot_start(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random", seed=1)
    while run.n_labels < 3:  # negatives only: the check needs a positive
        item = run.shown.item_index
        run.answer(-1, item_index=item)
    at = at_address(run.session_id)
    said = [as_shown(m.value) for m in at.markdown if "Guarantee" in m.value]
    assert said == [rules.CHECK_NEEDS_A_POSITIVE]
    button = at.button(key="start_check")
    assert button.disabled and button.help == "A random check can start once a positive is labelled."


# --------------------------------------------------------------------------- the early estimate


def test_an_estimate_wider_than_half_the_unlabelled_items_is_too_early_and_left_off_the_chart():
    from app import charts

    # the trial's: "about 392 positives still unlabelled, 0–867" with 1,761 items unlabelled
    early = rules._finish("model-based", "test", 17, 392.0, 0.0, 867.0, 0.95, unlabelled=1761)
    assert early.known and early.too_early
    words = early.in_words()
    assert words.startswith("Positives still unlabelled: too early to estimate")
    assert "392" not in words and "867" not in words
    gain = pd.DataFrame(
        {
            "n_labels": np.arange(1, 37),
            "found": np.minimum(np.arange(1, 37) // 2, 17),
            "drawn": np.zeros(36, dtype=bool),
        }
    )
    figure = charts.gain_figure(gain, early, 0.95)
    assert figure["layout"]["yaxis"]["range"][1] == pytest.approx(1.08 * 17)  # fits what was found
    assert len(figure["data"]) == 1
    # narrow enough: shown, as before
    useful = rules._finish("model-based", "test", 17, 40.0, 20.0, 70.0, 0.95, unlabelled=1761)
    assert not useful.too_early and useful.in_words().startswith("About 40 positives still unlabelled")
    assert len(charts.gain_figure(gain, useful, 0.95)["data"]) == 3
    # the draws of a recall check follow the same rule: their interval is exact, but as wide it says nothing yet
    drawn = rules._finish(
        "random draws", "test", 17, 392.0, 0.0, 867.0, 0.95, positives_drawn=3, unlabelled=1761, draws=3
    )
    assert drawn.too_early and drawn.in_words().startswith(
        "Positives still unlabelled: too early to estimate from 3 random draws; draw more in a random check."
    )
    narrow = rules._finish("random draws", "test", 17, 40.0, 20.0, 70.0, 0.95, positives_drawn=3, unlabelled=1761)
    assert not narrow.too_early


# --------------------------------------------------------------------------- History while the model is prepared


def test_a_change_in_history_during_a_first_start_s_compile_says_why_it_waits(db_url, monkeypatch):
    from app.services import startup
    from core.solvers._compile import Progress

    monkeypatch.setattr(startup, "compiled_code_progress", lambda: Progress(done=3, compiling=True))
    spun = spinners(monkeypatch)
    run, at = opened(db_url, 6, "history")
    before = len(spun)
    target = run.answers[-1]
    (change,) = [b for b in at.button if b.label.startswith("Change to")]
    change.click().run()
    assert not at.exception, at.exception
    assert [t for t in spun[before:] if NOTICE in t] and "your answer is saved" in spun[-1]
    [b for b in at.button if b.label == "Remove this answer"][0].click().run()
    assert len([t for t in spun[before:] if NOTICE in t]) == 2
    assert target.label_id not in {
        e.label_id for e in repo.label_events(MarginLab.from_url(db_url).engine, run.session_id)
    }


# --------------------------------------------------------------------------- timings after a resume


def test_a_resumed_session_shows_no_empty_model_update_time(db_url):
    run, at = opened(db_url, 5)  # a new process: the model is rebuilt, not updated
    timings = [as_shown(c.value) for c in at.caption if solver_words(run.info.solver) in as_shown(c.value)]
    assert timings and not any("–" in t or "Model updated" in t for t in timings), timings
    test_app.click(at, "positive")
    timings = [as_shown(c.value) for c in at.caption if solver_words(run.info.solver) in as_shown(c.value)]
    assert any(re.match(r"Model updated in \d+\.\d ms", t) for t in timings), timings


# --------------------------------------------------------------------------- Compare


def test_compare_by_default_runs_every_heuristic_on_one_model_and_shows_no_spread_of_one_seed(db_url):
    MarginLab.from_url(db_url).ensure_demo_dataset()
    at = test_app.start_app()
    at.switch_page("views/compare.py").run()
    assert at.selectbox(key="compare_solver").value == DEFAULT_SOLVER[DEFAULT_STRATEGY]
    run_comparison(at, budget=12, seeds=1, initial=4)
    assert not at.error, [e.value for e in at.error]
    svc = MarginLab.from_url(db_url)
    (stored,) = svc.comparisons()
    rows = svc.comparison(stored.id).rows
    assert set(rows["strategy"]) == {DEFAULT_STRATEGY, strategies.BASELINE}
    assert set(rows["solver"]) == {DEFAULT_SOLVER[DEFAULT_STRATEGY]}
    (summary,) = [df.value for df in at.dataframe if ALC in df.value.columns]
    assert not any("±" in str(v) for v in summary.to_numpy().ravel())
    # few enough columns to fit the page (the rest under "More columns"), no solver column when there is one
    assert len(summary.columns) <= 9 and "model" not in summary.columns
    (more,) = [df.value for df in at.dataframe if "support vectors" in df.value.columns]
    assert {"seeds", "support vectors", "update ms p50 / p95"} <= set(more.columns)
    assert any(solver_words(DEFAULT_SOLVER[DEFAULT_STRATEGY]) in as_shown(c.value) for c in at.caption)
    # the page in words: no code name outside Advanced or a column "for engineers"; "1 seed"; no spread of one
    text = shown_text(at)
    assert sorted({name for name in code_names() for t in text if name in t}) == [], text
    picked = at.selectbox(key="comparison_picker")
    said = picked.format_func(picked.value)
    assert "× 1 seed ·" in said and heuristic_words(DEFAULT_STRATEGY) in said, said
    assert not any(name in (at.multiselect(key="compare_strategies").help or "") for name in code_names())
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert titles and not any("over seeds" in t for t in titles)


# --------------------------------------------------------------------------- Export


def test_the_export_preview_is_rounded_and_the_file_keeps_every_digit(db_url):
    run, at = opened(db_url, 12, "export")
    svc = MarginLab.from_url(db_url)
    (preview,) = [df.value for df in at.dataframe if "decision_value" in df.value.columns]
    scores = [s for s in preview["decision_value"] if s]
    assert scores and all(len(re.sub(r"[^0-9]", "", s.split("e")[0]).lstrip("0")) <= 3 for s in scores), scores
    # every number written out, to 3 significant digits, thousands separated (the trial's "4.11e+03": "4,110")
    numbers = [s for column in ("decision_value", "update_ms", "query_ms") for s in preview[column] if s]
    assert numbers and not any("e" in s for s in numbers), numbers
    assert all(len(re.sub(r"[^0-9]", "", s).strip("0")) <= 3 for s in numbers), numbers
    from app.ui.tables import export_preview

    shown = export_preview(pd.DataFrame({"update_ms": [4111.9, 0.012345, 57.0], "decision_value": [-0.9087, 0, None]}))
    assert list(shown["update_ms"]) == ["4,110", "0.0123", "57.0"]
    assert list(shown["decision_value"]) == ["-0.909", "0", ""]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", t) for t in preview["labelled_at"])
    import io

    exported = pd.read_csv(
        io.BytesIO(svc.export_labels("csv", session_id=run.session_id)), dtype=str, keep_default_na=False
    )
    assert any(len(re.sub(r"[^0-9]", "", s).lstrip("0")) > 3 for s in exported["decision_value"] if s)
    assert all("T" in t and "." in t for t in exported["labelled_at"])
    assert set(exported["strategy"]) <= set(strategies.REGISTRY.names()) | {"random (cold start)"}


def test_the_live_roc_title_takes_two_short_lines(db_url):
    from app import charts

    run = labelled(MarginLab.from_url(db_url), n=12)
    title = charts.roc_figure(run.roc(), has_evaluation=False)["layout"]["title"]["text"]
    assert len(title.split("<br>")) <= 2, title


# --------------------------------------------------------------------------- the trial's second look


def test_the_estimate_of_a_most_likely_first_session_names_its_heuristic_in_words(db_url):
    run = labelled(MarginLab.from_url(db_url), strategy="largest-positive", n=12)
    at = at_address(run.session_id)
    text = shown_text(at)
    assert any("Method:" in t and heuristic_words("largest-positive") in t for t in text), text
    assert not sorted({name for name in code_names() for t in text if name in t})
    # the heuristic's own reason, in its code's terms, is a tooltip marked as the engineers'
    (why,) = [c for c in at.caption if as_shown(c.value).startswith("Chosen by")]
    assert why.help.startswith("Details for engineers: largest-positive"), why.help


def test_a_model_update_of_over_a_second_is_said_in_seconds():
    from types import SimpleNamespace

    from app.ui.item import model_timings

    run = SimpleNamespace(last_update_ms=4111.9, info=SimpleNamespace(solver="lasvm", params={}))
    shown = SimpleNamespace(query_ms=12.34)
    assert (
        as_shown(model_timings(run, shown))
        == f"Model updated in 4.1 s · next item found in 12.3 ms · {solver_words('lasvm')}"
    )
    run.last_update_ms = 999.94
    assert as_shown(model_timings(run, None)).startswith("Model updated in 999.9 ms")
    # after a resume (no update yet in this process) the line opens on the next item, as a sentence does
    run.last_update_ms = None
    assert as_shown(model_timings(run, shown)) == f"Next item found in 12.3 ms · {solver_words('lasvm')}"


def test_an_item_drawn_before_there_is_a_model_says_so_instead_of_a_score(db_url):
    run, at = opened(db_url, 1)
    assert run.shown.strategy.endswith("(cold start)")
    (why,) = [as_shown(c.value) for c in at.caption if as_shown(c.value).startswith("Chosen by")]
    assert why.endswith("no model yet") and "score" not in why, why


def test_the_stopping_panel_separates_thousands(db_url):
    run, at = opened(db_url, TRIAL_LABELS)
    check = run.stopping_status().check
    assert check.planned >= 1000  # (the trial's: at least 1,682 random draws)
    (rules_said,) = [as_shown(c.value) for c in at.caption if "random items to test" in c.value]
    assert f"at least {check.planned:,} random items" in rules_said, rules_said
    assert not re.search(r"\d{4}", rules_said.replace(str(run.n_labels), "")), rules_said


def test_the_stopping_settings_are_in_percent_and_their_choices_fit_the_box(db_url):
    run, at = opened(db_url, 4)
    target, confidence = at.number_input(key="stopping_target"), at.number_input(key="stopping_confidence")
    assert (target.value, confidence.value) == (95.0, 95.0) and target.format == "%g"
    assert "%" in target.label and "%" in confidence.label
    options = at.selectbox(key="stopping_rule").options
    assert all(len(o) <= 40 for o in options), options  # (the trial's was cut: "…target recall is reachec")
    target.set_value(90.0)
    at.button(key="FormSubmitter:stopping_settings-Apply").click().run()
    assert not at.exception, at.exception
    assert MarginLab.from_url(db_url).open_session(run.session_id).stopping_status().target_recall == pytest.approx(0.9)


def test_a_removed_answer_has_no_place_in_history_rather_than_none(db_url):
    run = labelled(MarginLab.from_url(db_url), n=6)
    assert run.remove_label(run.answers[2].label_id).ok
    at = at_address(run.session_id)
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    (table,) = [df.value for df in at.dataframe if df.key == "history_table"] or [None]
    if table is None:
        (table,) = [df.value for df in at.dataframe if "changes" in df.value.columns][-1:]
    assert "None" not in set(table["#"].astype(str)) and "–" in set(table["#"]), table["#"]


def test_the_projects_page_keeps_the_solver_and_c_under_advanced(db_url):
    MarginLab.from_url(db_url).ensure_demo_dataset()
    at = test_app.start_app()
    at.switch_page("views/projects.py").run()
    assert not at.exception, at.exception
    text = shown_text(at)
    assert "Solver" not in text and "C" not in text and "Dataset" in text, text
    assert at.selectbox(key="project_solver") and at.number_input(key="project_C")


def test_the_data_table_separates_thousands(db_url):
    MarginLab.from_url(db_url).ensure_demo_dataset()
    at = test_app.start_app()
    at.switch_page("views/data.py").run()
    (table,) = [df.value for df in at.dataframe if "shown as" in df.value.columns]
    assert list(table["items"]) == ["1,797"], table["items"]
    # and wherever a dataset is picked, with its number of items
    at.switch_page("views/compare.py").run()
    picker = at.selectbox(key="compare_dataset")
    assert picker.format_func(picker.value).endswith("(1,797 items)")


def test_the_gain_chart_has_whole_number_ticks_and_no_curve_of_one_point():
    from app import charts

    def gain(n):
        return pd.DataFrame(
            {
                "n_labels": np.arange(1, n + 1),
                "found": np.minimum(np.arange(1, n + 1) // 3, 9),
                "drawn": np.zeros(n, dtype=bool),
            }
        )

    for n in (2, 4, 36, 400):
        layout = charts.gain_figure(gain(n))["layout"]
        for axis in ("xaxis", "yaxis"):
            assert layout[axis]["tickformat"] == ",d" and isinstance(layout[axis]["dtick"], int), (n, layout[axis])
            assert layout[axis]["dtick"] >= 1
    assert charts.gain_figure(gain(400))["layout"]["xaxis"]["dtick"] == 100
    one = charts.gain_figure(gain(1))
    assert one["layout"]["annotations"][0]["text"] == "the curve starts at the second label"
    assert not one["data"][0]["x"]


def test_a_two_line_chart_title_has_room_above_its_first_line():
    from app import charts

    layout = charts.margin_figure(pd.DataFrame({"n_labels": [1, 2], "n_in_margin": [5, 4]}))["layout"]
    assert "<br>" in layout["title"]["text"]  # ("Unlabelled items the model is unsure of": two lines)
    title = layout["title"]
    assert title["yref"] == "container" and title["y"] == 1.0 and title["yanchor"] == "top"
    assert title["pad"]["t"] >= 10
    lines = len(title["text"].split("<br>"))
    assert layout["margin"]["t"] >= title["pad"]["t"] + lines * 18


def test_my_labels_and_history_say_the_answers_in_the_same_words(db_url):
    run, at = opened(db_url, 8, "my_labels")
    names = run.class_names
    assert names[1] != "positive"  # (the demo's classes have names: "8" and "rest")
    (mine,) = [df.value for df in at.dataframe if df.key == "my_labels"] or [at.dataframe[0].value]
    at.switch_page("views/history.py").run()
    (history,) = [df.value for df in at.dataframe if "changes" in df.value.columns][-1:]
    said = {answer_words(value, names) for value in names}  # ("Positive (8)", as the Label page's buttons)
    assert set(mine["answer"]) <= said and set(mine["answer"]) == set(history["answer"])


def test_the_comparison_summary_counts_support_vectors_in_whole_numbers():
    from app.ui.tables import summary_table

    table = summary_table(
        pd.DataFrame(
            [
                {
                    "strategy": "near-boundary",
                    "solver": "lasvm",
                    "n_seeds": 1,
                    "alc_mean": 0.5,
                    "alc_std": 0.0,
                    "final_n_sv": 57.0,
                }
            ]
        )
    )
    assert table.iloc[0]["support vectors"] == "57"
    assert table.iloc[0]["heuristic"] == heuristic_words("near-boundary")
    assert table.iloc[0]["heuristic, for engineers"] == "near-boundary"
