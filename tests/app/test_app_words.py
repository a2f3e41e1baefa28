"""The pages in a screener's words (what to find, which item next and why, how many found, when to stop): the
model's own terms (support vectors, C and gamma, leave-one-out, kernels, ALC, W/T/L, WSS@95) only under
"Advanced" or in a column "for engineers"; the untouched demo out of the way once one's own session exists.

Through ``streamlit.testing.v1.AppTest`` on the real entry point, each test on its own SQLite database.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from app.services import DEMO_NAME, MarginLab
from app.services.vocabulary import METRIC_WORDS
from core import strategies
from tests.app import test_app
from tests.app.test_app import as_shown, start_app, start_session
from tests.app.test_app_first_day import code_names, outside_advanced, shown_text
from tests.app.test_app_first_minute import owner_signs_in
from tests.app.test_app_pages import at_address

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

#: the model's own terms, which a screener does not read outside Advanced
MODEL_TERMS = (
    "exact model",
    "support vector",
    "gamma",
    "leave-one-out",
    "kernel",
    "rbf",
    "ALC",
    "W / T / L",
    "WSS",
    # the stopping rules' terms ("items the model is unsure of", "agreement between the last two models", "a
    # fixed set of check items" instead), the timing's "query", the form's "solver" and the upload's "scaling"
    "inside the margin",
    "kappa",
    "stop set",
    "stop-set",
    "query",
    "solver",
    "scaling",
)


def chart_titles(at: AppTest, *, advanced: bool = False) -> list[str]:
    """The titles and axis titles of the Plotly charts outside Advanced (``advanced``: those under it)."""
    outside = {id(node) for node in outside_advanced(at._tree)}
    found = []
    for chart in at.get("plotly_chart"):
        if (id(chart) in outside) == advanced:
            continue
        layout = json.loads(chart.proto.spec).get("layout", {})
        parts = [layout.get("title"), layout.get("xaxis", {}).get("title"), layout.get("yaxis", {}).get("title")]
        found += [str(p.get("text", "")) if isinstance(p, dict) else str(p or "") for p in parts]
    return found


def advanced_text(at: AppTest) -> list[str]:
    """The captions and Markdown under an expander labelled "Advanced…"."""
    out = []
    for expander in at.expander:
        if str(expander.label).startswith("Advanced"):
            out += [as_shown(c.value) for c in expander.caption] + [as_shown(m.value) for m in expander.markdown]
    return out


def terms_in(text: list[str]) -> list[str]:
    return sorted({term for term in MODEL_TERMS for t in text if term.lower() in t.lower()})


def chosen_session(db_url: str, n: int):
    """A session on the demo, C and gamma chosen from the labels, answered ``n`` times as the true labels say."""
    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="near-boundary", auto_hyper=True)
    while run.n_labels < n:
        item = run.shown.item_index
        run.answer(int(run.y_true[item]), item_index=item)
    return run


def test_the_label_page_says_the_model_s_settings_in_words_and_keeps_its_terms_under_advanced(db_url):
    run = chosen_session(db_url, 31)  # (chosen from the first 20 labels, in use from label 30)
    at = at_address(run.session_id)
    text = shown_text(at)
    # the session's name, the timings, the settings' line and the charts: no model term outside Advanced
    assert terms_in(text) == [], [t for t in text if terms_in([t])]
    assert terms_in(chart_titles(at)) == [], chart_titles(at)
    assert any("settings chosen from your labels at label 30" in t for t in text), text
    assert any("next choice at 40 labels" in t for t in text), text
    # the engineer's view: the values, how they were chosen, and the support vectors (a number and a chart)
    advanced = advanced_text(at)
    assert any(t == run.hyper_words for t in advanced), advanced
    n_sv = int(run.history()["n_sv"].iloc[-1])
    assert any(t.startswith(f"{n_sv} support vectors") for t in advanced), advanced
    assert any("Support vectors" in t for t in chart_titles(at, advanced=True))
    # what a screener reads instead: the positives found, the items the model is unsure of
    assert any("Positives found" in t for t in chart_titles(at))


def test_a_session_s_line_says_how_it_picks_items_and_no_model_term(db_url):
    run = chosen_session(db_url, 2)
    at = at_address(run.session_id)
    (line,) = at.selectbox(key=f"session_picker_{run.session_id}").options
    assert "exact" not in line and terms_in([line]) == [], line
    for page in ("sessions", "export"):
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, at.exception
        assert not [t for t in shown_text(at) if "exact" in t], page


def test_the_compare_page_names_its_measures_in_words_with_their_meaning(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    svc.run_comparison(dataset_id, strategies=["near-boundary", "random"], budget=8, seeds=2, initial=4)
    at = test_app.start_app()
    at.switch_page("views/compare.py").run()
    assert not at.exception, at.exception
    text = shown_text(at)
    assert terms_in(text) == [], [t for t in text if terms_in([t])]
    assert terms_in(chart_titles(at)) == [], chart_titles(at)
    # (each heuristic on its own model: the summary names the models, in words)
    assert sorted({name for name in code_names() for t in text if name in t}) == [], text
    (table,) = [df.value for df in at.dataframe if METRIC_WORDS["alc"].name in df.value.columns]
    assert table["model"].nunique() == 2, table
    # what the test AUC says (how well the test items are ranked) stays with the engineers' columns, which
    # leaves the table narrow enough for a 1,400-pixel window
    assert not [c for c in table.columns if "AUC" in c or c == "to 95 %"] and len(table.columns) <= 8, table.columns
    assert METRIC_WORDS["wtl"].name in table.columns
    # each measure's one-line meaning is on the page; its code name is under Advanced, for engineers
    for metric in METRIC_WORDS.values():
        assert any(f"{metric.name}: {metric.meaning}" in t for t in text), metric
        assert any(metric.code in t for t in advanced_text(at)), metric


def test_the_data_page_keeps_the_kernel_under_advanced(db_url):
    at = test_app.start_app()
    at.switch_page("views/data.py").run()
    assert not at.exception, at.exception
    text = shown_text(at)
    assert terms_in(text) == [], [t for t in text if terms_in([t])]
    (advanced,) = [e for e in at.expander if str(e.label).startswith("Advanced")]
    (frame,) = [df.value for df in advanced.dataframe]
    assert list(frame["kernel"]) == ["rbf"]  # the demo's


def test_the_untouched_demo_leaves_the_session_list_once_one_s_own_session_exists(db_url):
    at = owner_signs_in()  # the demo, open on its first item
    svc = MarginLab.from_url(db_url)
    (demo,) = svc.sessions()
    assert demo.dataset_name == DEMO_NAME and demo.n_labels == 0
    start_session(at, "owner", "random")
    (own,) = [s for s in svc.sessions() if s.id != demo.id]
    (picker,) = [s for s in at.selectbox if s.key and s.key.startswith("session_picker_")]
    assert len(picker.options) == 1 and picker.options[0].startswith(f"#{own.id} "), picker.options
    # kept, not deleted: the Sessions page lists it, and with a label it is listed on the Label page again
    assert {s.id for s in svc.sessions()} == {demo.id, own.id}
    run = svc.open_session(demo.id)
    item = run.shown.item_index
    run.answer(int(run.y_true[item]), item_index=item)
    again = owner_signs_in()
    (picker,) = [s for s in again.selectbox if s.key and s.key.startswith("session_picker_")]
    assert len(picker.options) == 2 and any(f"#{demo.id} " in o for o in picker.options), picker.options


def test_the_project_lists_say_how_a_project_with_classes_picks_items_in_words(db_url):
    """The Projects page's and Label together's lists of projects name a project's way of picking items as the
    forms do ("Least sure on any class"), never by its code name ("least-sure-class")."""
    from app.services.classes import CLASS_STRATEGY_WORDS, MULTI_LABEL_STRATEGY_WORDS
    from tests.app.test_app import PASSWORD, ensure_account
    from tests.app.test_app_item_display import import_kind

    svc = MarginLab.from_url(db_url)
    dataset_id = import_kind(svc, "table")
    ensure_account(db_url, "olga")
    me = svc.sign_in("olga", PASSWORD)
    wanted = [(name, words.format(target="one"), False) for name, words in CLASS_STRATEGY_WORDS.items()]
    wanted += [(name, words, True) for name, words in MULTI_LABEL_STRATEGY_WORDS.items()]
    made = {
        svc.create_project(
            me,
            name=f"project {n}",
            dataset_id=dataset_id,
            strategy=name,
            classes="one, two, three",
            multi_label=several,
            members=["olga"],
        ): words
        for n, (name, words, several) in enumerate(wanted)
    }
    codes = [n for n in (*CLASS_STRATEGY_WORDS, *MULTI_LABEL_STRATEGY_WORDS) if n != "random"]
    at = start_app("olga")
    for page, key in (("projects", "project_shown"), ("team_label", "team_project")):
        at.switch_page(f"views/{page}.py").run()
        assert not at.exception, at.exception
        picker = at.selectbox(key=key)
        shown = [as_shown(line) for line in picker.options]
        assert not [line for line in shown for code in codes if code in line], shown
        for project_id, words in made.items():
            assert any(f" · {words}, " in line for line in shown), (project_id, words, shown)


def test_the_sessions_table_says_how_a_session_with_classes_picks_items_in_words(db_url):
    from tests.app.test_app_classes import three_blobs

    svc = MarginLab.from_url(db_url)
    dataset_id, _ = three_blobs(svc)
    svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="target-class", classes="cat, dog, fox", target="dog"
    )
    at = start_app()
    at.switch_page("views/sessions.py").run()
    assert not at.exception, at.exception
    (table,) = [d for d in at.dataframe if "how items are picked" in d.value.columns]
    assert list(table.value["how items are picked"]) == ["Most likely dog"]


def kinds_of_sessions(db_url) -> dict[str, int]:
    """A two-class session, one with named classes looking for a class first, and one with several classes per
    item, on one database: their ids by kind."""
    from app.services.classes import CLASS_STRATEGY_WORDS, MULTI_LABEL_STRATEGY_WORDS
    from tests.app.test_app_classes import three_blobs
    from tests.app.test_app_multi_label import four_groups

    svc = MarginLab.from_url(db_url)
    two = chosen_session(db_url, 2).session_id
    dataset_id, _ = three_blobs(svc)
    target_first = next(s for s, words in CLASS_STRATEGY_WORDS.items() if "{target}" in words)
    classes = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy=target_first, classes="food, sport, news", target="sport"
    ).session_id
    dataset_id, _ = four_groups(svc)
    least_sure = next(s for s in MULTI_LABEL_STRATEGY_WORDS if s != strategies.BASELINE)
    several = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy=least_sure, classes="a, b", multi_label=True
    ).session_id
    return {"two": two, "classes": classes, "several": several}


def test_the_sessions_list_says_how_each_kind_of_session_picks_items_in_words(db_url):
    from app.services.classes import CLASS_STRATEGY_WORDS, MULTI_LABEL_STRATEGY_WORDS, strategy_words

    ids = kinds_of_sessions(db_url)
    at = at_address(ids["two"])
    at.switch_page("views/sessions.py").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value.set_index("id")
    shown = {kind: table.loc[i, "how items are picked"] for kind, i in ids.items()}
    # the words the New session form showed, not the code names
    assert shown["classes"] == "Most likely sport", shown
    several = next(s for s in MULTI_LABEL_STRATEGY_WORDS if s != strategies.BASELINE)
    assert shown["several"] == strategy_words(several), shown
    names = [*code_names(), *CLASS_STRATEGY_WORDS, *MULTI_LABEL_STRATEGY_WORDS]
    assert not [n for n in names if n != strategies.BASELINE and any(n in v for v in shown.values())], shown
    # and on the Export page's list of sessions
    at.switch_page("views/export.py").run()
    options = at.selectbox(key="export_session").options
    assert not [n for n in names if n != strategies.BASELINE and any(n in o for o in options)], options


def test_the_export_page_says_what_label_value_holds_for_the_session_s_kind(db_url):
    ids = kinds_of_sessions(db_url)
    at = at_address(ids["two"])
    at.switch_page("views/export.py").run()
    assert not at.exception, at.exception

    def caption(session_id: int | None) -> str:
        datasets = at.selectbox(key="export_dataset")
        datasets.select_index(len(datasets.options) - 1).run()  # every dataset: every session to choose from
        sessions = at.selectbox(key="export_session")
        sessions.select_index(
            0 if session_id is None else [o.startswith(f"#{session_id} ") for o in sessions.options].index(True)
        ).run()
        assert not at.exception, at.exception
        (text,) = [as_shown(c.value) for c in at.caption if "labelled items match" in c.value]
        return text

    two = caption(ids["two"])
    assert "+1 / -1 in label_value" in two and "1 to K" not in two, two
    classes = caption(ids["classes"])
    assert "+1 / -1" not in classes and "number, 1 to 3" in classes and "label_value" in classes, classes
    several = caption(ids["several"])
    assert "+1 / -1" not in several and "0 for none" in several and "summed" in several, several
    # every session: what each kind's rows hold
    every = caption(None)
    assert "+1 / -1" in every and "summed" in every and "1 to 3" in every, every


#: words a screener reads without knowing them (outside Advanced, and in the tooltips but the engineers' details)
JARGON = ("heuristic", "recall check", "kappa", "seed", "near-boundary", "largest-positive")


def tooltips(at: AppTest) -> list[str]:
    """The tooltips of the page's elements outside Advanced (but the one "for engineers" under an item)."""
    found = [str(getattr(node, "help", "") or "") for node in outside_advanced(at._tree)]
    return [t for t in found if t and not t.startswith("Details for engineers")]


def test_the_screener_pages_say_how_items_are_chosen_and_the_random_check_in_words(db_url):
    """Label (its New session form and stopping panel), History, My labels, Sessions and Export say how an item
    was chosen and the check by random sample in words; the check's statistical name, "recall check", only
    beside what it is."""
    from tests.app.test_app_pages import labelled

    run = labelled(MarginLab.from_url(db_url), n=36)
    run.start_check()
    at = at_address(run.session_id)
    said = {}
    for page in ("label", "history", "my_labels", "sessions", "export"):
        if page != "label":
            at.switch_page(f"views/{page}.py").run()
        assert not at.exception, (page, at.exception)
        text = shown_text(at) + tooltips(at)
        meaning = [t for t in text if "a check by random sample that you found enough (a recall check)" in t]
        said[page] = sorted({w for w in JARGON for t in text if w in t.lower() and t not in meaning})
        if page == "label":
            assert meaning, text
            # the New session form says what each way of picking items is good for, from the registry's entries
            picker = at.selectbox(key="new_strategy")
            assert picker.label == "How to pick the next item"
            said_well = [f"{e.words}: {e.meaning}." for e in strategies.REGISTRY.entries() if e.meaning]
            assert len(said_well) >= 3 and all(w in picker.help for w in said_well), picker.help
            assert "Stop the random check" in text and "Chosen by **drawn at random to check you found enough**" in [
                t.split(" · ")[0] for t in text
            ], text
        if page in ("history", "my_labels"):
            (table,) = [d.value for d in at.dataframe]
            assert "how it was chosen" in table.columns, table.columns
    assert said == {page: [] for page in said}, said


def test_a_document_session_of_the_model_suited_to_the_data_is_named_by_the_model_that_runs(db_url):
    from app.services.vocabulary import model_words, solver_words
    from app.ui.tables import correction_note
    from core.presets import PRESETS
    from tests.app.test_app_item_display import import_kind

    svc = MarginLab.from_url(db_url)
    dataset = import_kind(svc, "text")  # (documents: TF-IDF rows)
    run = svc.start_session(dataset_id=dataset, annotator="ada", strategy="largest-positive", model="auto")
    # stored: the review model on the ramp solver's name (learned by another solver on the documents' rows)
    assert run.info.params["model"] == "review" and run.info.solver == "ramp"
    review, ramp = PRESETS["review"]["words"], solver_words("ramp")
    assert model_words(run.info.solver, run.info.params) == review != ramp
    at = at_address(run.session_id)
    (line,) = at.selectbox(key=f"session_picker_{run.session_id}").options
    assert review in line and ramp not in line, line
    text = shown_text(at)
    assert any(review in t.lower() for t in text) and not [t for t in text if ramp in t.lower()], text
    assert correction_note(run.info.solver, run.info.params).startswith(review.capitalize()), "on the History page"
    at.switch_page("views/sessions.py").run()
    assert not at.exception, at.exception
    (model,) = at.dataframe[0].value["model"]
    assert model == review, model


@pytest.mark.parametrize(
    "value, word",
    [
        (-0.3, "poor"),
        (0.0, "slight"),
        (0.2, "slight"),
        (0.21, "fair"),
        (0.4, "fair"),
        (0.524, "moderate"),
        (0.61, "substantial"),
        (0.8, "substantial"),
        (0.81, "almost perfect"),
        (1.0, "almost perfect"),
        (None, ""),
    ],
)
def test_a_kappa_gets_landis_and_koch_s_word(value, word):
    from app.services.vocabulary import kappa_strength, kappa_words

    assert kappa_strength(value) == word
    assert kappa_words(value) == ("–" if value is None else f"{value:.3f} {word}")
