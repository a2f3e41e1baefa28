"""The pages as a new user met them: each test here failed before the fix it names (AppTest, no browser;
the browser-only ones are in tests/browser/test_browser_pages.py)."""

from __future__ import annotations

import os
import re

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import storage
from app import charts
from app.services import MarginLab
from app.services.common import answer_words
from app.services.vocabulary import heuristic_words
from app.ui.tables import ALC, WTL
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import click, run_comparison, start_app, start_session

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL


def compare_page(at):
    at.switch_page("views/compare.py").run()
    assert not at.exception, at.exception


# --------------------------------------------------------------------------- Compare


def test_after_a_run_the_compare_page_shows_that_comparison(db_url):
    """The picker kept the previous comparison (a keyed selectbox ignores ``index``)."""
    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()
    at = start_app()
    compare_page(at)
    run_comparison(at, ["near-boundary", "random"])
    first = svc.comparisons()[0].id
    assert at.selectbox(key="comparison_picker").value == first
    run_comparison(at, ["random"], budget=10)
    newest = svc.comparisons()[0].id
    assert newest != first
    assert at.selectbox(key="comparison_picker").value == newest
    (table,) = [df.value for df in at.dataframe if ALC in df.value.columns]
    assert list(table["heuristic"]) == [heuristic_words("random")]  # the summary is the new comparison's
    # choosing an older one still works
    at.selectbox(key="comparison_picker").select(first).run()
    (table,) = [df.value for df in at.dataframe if ALC in df.value.columns]
    assert list(table["heuristic"]) == [heuristic_words("near-boundary"), heuristic_words("random")]


def test_a_comparison_reports_its_progress_within_each_run(db_url, monkeypatch):
    """The text says which run, the labels of it done, the time elapsed and left; the page is told a
    few times a second (here a clock that moves 0.1 s per look: every third label or so is told)."""
    from app.services import comparisons

    ticks = iter(range(10**6))
    monkeypatch.setattr(comparisons.time, "monotonic", lambda: 0.1 * next(ticks))
    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    shown = []
    svc.run_comparison(
        dataset_id,
        strategies=["near-boundary", "random"],
        budget=30,
        seeds=1,
        initial=4,
        progress=lambda fraction, text: shown.append((fraction, text)),
    )
    within = [(f, t) for f, t in shown if re.match(r"run \d/4: ", t)]
    # tasks: the full-data references of incremental and lasvm (the 1,258 training items they learn),
    # then near-boundary and random (their labels)
    assert [t.split(" runs done")[0] for _, t in shown if " runs done" in t] == ["1/4", "2/4", "3/4", "4/4"]
    assert {t.split(":")[0] for _, t in within} == {"run 1/4", "run 2/4", "run 3/4", "run 4/4"}
    learned = [t for _, t in within if t.startswith(("run 1/4", "run 2/4"))]
    assert all(
        re.search(r": every training item \([\w ]+\), seed 0 · [\d,]+/1,258 training items learned · ", t)
        for t in learned
    )
    assert sum("1,258/1,258" in t for t in learned) == 2  # the last item of each is always told
    labels = [
        int(re.search(r"label (\d+)/30 ·", t).group(1)) for _, t in within if t.startswith(("run 3/4", "run 4/4"))
    ]
    assert 5 <= len(labels) < 2 * 30 and labels[-1] == 30  # throttled, and the last label is always told
    fractions = [f for f, _ in shown]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert all(re.search(r" · \d+:\d\d elapsed(, about \d+:\d\d left)?$", t) for _, t in shown), shown


def test_the_compare_page_says_when_the_full_data_reference_learned_a_subsample(db_url, monkeypatch):
    """On a large dataset the reference learns REFERENCE_MAX_ITEMS of the training items, and the page says
    so under the summary (here the limit is lowered below the demo's 1,258 training items)."""
    import core.experiment

    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()
    at = start_app()
    compare_page(at)
    run_comparison(at, ["near-boundary"], budget=8, initial=4)
    assert not any("subsample" in i.value for i in at.info)  # the whole training pool: nothing to say
    monkeypatch.setattr(core.experiment, "REFERENCE_MAX_ITEMS", 300)
    run_comparison(at, ["near-boundary"], budget=8, initial=4)
    (note,) = [i.value for i in at.info if "subsample" in i.value]
    assert "subsample of 300 of the 1,258 training items" in note.replace("\\", "")
    stored = svc.comparison(svc.comparisons()[0].id)
    assert {(r["n_train"], r["n_pool"]) for r in stored.summary["references"]} == {(300, 1258)}


def test_compare_overlay_is_off_and_the_win_tie_loss_column_comes_early(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    svc.run_comparison(dataset_id, strategies=["near-boundary", "random"], budget=8, seeds=2, initial=4)
    at = start_app()
    compare_page(at)
    (overlay,) = [t for t in at.toggle if t.label.startswith("Overlay the labelling sessions")]
    assert overlay.value is False
    (table,) = [df.value for df in at.dataframe if ALC in df.value.columns]
    assert list(table.columns).index(WTL) <= 3  # on screen without scrolling sideways


def test_session_overlay_keeps_the_axis_of_the_comparison_and_looks_different():
    rows = pd.DataFrame(
        [
            {"strategy": s, "solver": "lasvm", "seed": 0, "n_labels": n, "auc": 0.5 + n / 100, "n_sv": n}
            for s in ("near-boundary", "random")
            for n in range(1, 31)
        ]
    )
    overlay = pd.DataFrame(
        {
            "session": ["session 1 (ada, random)"] * 300,
            "n_labels": np.arange(1, 301),
            "auc": np.linspace(0.5, 0.9, 300),
            "n_sv": np.arange(300),
        }
    )
    figure = charts.learning_curve_figure(rows, "auc", overlay=overlay)
    assert figure["layout"]["xaxis"]["range"][1] <= 31  # the comparison's 30 labels, not the session's 300
    lines = [t for t in figure["data"] if t.get("mode", "").startswith("lines") and "name" in t]
    heuristics = [t for t in lines if not t["name"].startswith("session")]
    (session,) = [t for t in lines if t["name"].startswith("session")]
    assert session["line"].get("dash") == "dot" and session.get("marker", {}).get("symbol")
    assert all(session["line"]["color"] != t["line"]["color"] for t in heuristics)
    assert all(t["line"].get("dash") in (None, "solid") for t in heuristics)


# --------------------------------------------------------------------------- Export


def test_export_offers_one_dataset_at_a_time(db_url):
    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()
    cancer = svc.import_bundled("breast-cancer").dataset_id
    run = svc.start_session(dataset_id=cancer, annotator="ada", strategy="random")
    for _ in range(3):
        run.answer(1, item_index=run.shown.item_index)
    at = start_app()
    at.switch_page("views/export.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="export_dataset").value == cancer  # the dataset with labels, not "all"
    (preview,) = [df.value for df in at.dataframe if "label" in df.value.columns]
    assert set(preview["label"]) == {"malignant"}  # the dataset's class name


# --------------------------------------------------------------------------- Label


def wide_dataset(svc, n_features=49):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, n_features))
    y = np.where(X[:, 7] - 2 * X[:, 30] > 0, 1, -1)
    header = ",".join(f"f{j}" for j in range(n_features)) + ",label"
    body = "\n".join(
        ",".join(f"{v:.6f}" for v in row) + f",{'yes' if t == 1 else 'no'}" for row, t in zip(X, y, strict=True)
    )
    return svc.import_csv((header + "\n" + body + "\n").encode(), name="wide", label_column="label", positive="yes")


def test_a_wide_table_item_shows_the_features_that_matter_first(db_url):
    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()
    dataset_id = wide_dataset(svc).dataset_id
    at = start_app()
    start_session(at, "ada", "near-boundary", dataset_id=dataset_id)
    session_id = repo.list_sessions(svc.engine)[0].id
    y_true = repo.load_dataset_arrays(svc.engine, dataset_id)[1]
    for _ in range(12):
        item = test_app.shown_item(at)
        click(at, "positive" if y_true[item] == 1 else "negative")
    item = test_app.shown_item(at)
    tables = [df.value for df in at.dataframe if "feature" in df.value.columns]
    assert len(tables) == 1  # one table holds every feature: the most relevant in view, the rest a scroll away
    (table,) = tables
    relevance = MarginLab.from_url(db_url).open_session(session_id).item_display.relevance(item)  # the stored model
    order = np.argsort(-relevance, kind="stable")
    assert list(table["feature"]) == [f"f{j}" for j in order]
    np.testing.assert_allclose(table["relevance"], relevance[order] / relevance.max())
    # the New session form's, the model's (under the charts), the stopping panel's terms and the Known items
    # panel's: none for the features
    assert [e.label for e in at.expander] == [
        "Named classes (3 to 9): one button per class",
        "Advanced",
        "Advanced: the model's settings and support vectors",
        "Advanced: the rules in the model's terms",
        "Known items (0 marked)",
    ]
    assert any(c.value.startswith("All 49 features, the ones that matter most") for c in at.caption)


def test_the_session_list_shows_the_current_annotators_sessions(db_url):
    """Label lists the signed-in person's own sessions only (answers go under one's own name); Sessions
    shows them by default and everybody's on request."""
    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    mine = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random").session_id
    theirs = svc.start_session(dataset_id=dataset_id, annotator="bea", strategy="random").session_id
    at = start_app()
    start_session(at, "ada", "random")
    newest = repo.list_sessions(svc.engine)[0].id
    assert session_choices(at) == {mine, newest}
    assert not [t for t in at.toggle if t.label == "All annotators"]
    at.switch_page("views/sessions.py").run()
    assert not at.exception, at.exception
    assert listed_sessions(at) == {mine, newest}
    [t for t in at.toggle if t.label == "All annotators"][0].set_value(True).run()
    assert listed_sessions(at) == {mine, theirs, newest}


def session_choices(at) -> set[int]:
    (picker,) = [s for s in at.selectbox if s.label == "Session"]
    return {int(re.match(r"#(\d+)", option).group(1)) for option in picker.options}


def listed_sessions(at) -> set[int]:
    """The sessions the Sessions page lists in its table."""
    (table,) = [df.value for df in at.dataframe if "annotator" in df.value.columns]
    return set(int(i) for i in table["id"])


# --------------------------------------------------------------------------- new: history, sessions, deletion


def labelled(svc, annotator="ada", strategy="near-boundary", n=8):
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    run = svc.start_session(dataset_id=dataset_id, annotator=annotator, strategy=strategy)
    while run.n_labels < n:
        item = run.shown.item_index
        run.answer(int(run.y_true[item]), item_index=item)
    return run


def at_address(session_id: int, user: str = "ada") -> AppTest:
    """A new browser session opened at an address naming ``session_id``, signed in as ``user`` (the address
    is kept through the sign-in)."""
    at = AppTest.from_file(test_app.MAIN, default_timeout=test_app.TIMEOUT)
    at.query_params["session"] = str(session_id)
    at.run()
    assert not at.exception, at.exception
    test_app.ensure_account(os.environ["MARGINLAB_DATABASE_URL"], user)
    return test_app.sign_in(at, user)


def test_the_address_opens_a_session_and_says_when_it_cannot(db_url):
    svc = MarginLab.from_url(db_url)
    older, newer = labelled(svc, n=2), labelled(svc, n=3)
    at = at_address(older.session_id)
    assert test_app.progress(at) == (2, 0) and test_app.shown_item(at) == older.shown.item_index
    svc.close_session(older.session_id)
    at = at_address(older.session_id)
    assert any(f"Session {older.session_id} is not open for labelling" in w for w in test_app.shown(at.warning))
    assert test_app.progress(at) == (3, 0)  # the most recent open session instead
    assert newer.session_id != older.session_id


def test_the_history_page_changes_and_removes_answers(db_url):
    svc = MarginLab.from_url(db_url)
    run = labelled(svc, n=10)
    at = at_address(run.session_id)
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Label history"]
    (picker,) = [s for s in at.selectbox if s.label == "Answer to change"]
    target = run.answers[2]
    picker.select(target.label_id).run()
    names = {value: answer_words(value, run.class_names) for value in run.class_names}  # ("Positive (8)")
    (change,) = [b for b in at.button if test_app.as_shown(b.label) == f"Change to {names[-target.value]}"]
    change.click().run()
    assert not at.exception, at.exception
    assert any(
        f"Item {target.item_index} changed from {names[target.value]} to {names[-target.value]}" in s
        for s in test_app.shown(at.success)
    )
    events = {e.label_id: e.value for e in repo.label_events(svc.engine, run.session_id)}
    assert events[target.label_id] == -target.value
    (corrected,) = [df.value for df in at.dataframe if len(df.value) == 1 and "changes" in df.value.columns]
    assert corrected["changes"].item().startswith(f"{names[target.value]} → {names[-target.value]} by ada at ")
    # remove another one
    other = run.answers[4]
    [s for s in at.selectbox if s.label == "Answer to change"][0].select(other.label_id).run()
    [b for b in at.button if b.label == "Remove this answer"][0].click().run()
    assert other.label_id not in {e.label_id for e in repo.label_events(svc.engine, run.session_id)}
    kinds = [c.kind for c in storage.label_corrections(svc.engine, run.session_id)]
    assert kinds == ["change", "remove"]


def test_a_change_clicked_before_the_page_caught_up_with_the_pick_changes_the_answer_picked(db_url):
    """Pick an answer and press Change at once (one run carries both, as a fast click under load does): the
    answer changed is the one picked, not the one the button was drawn for."""
    svc = MarginLab.from_url(db_url)
    run = labelled(svc, n=10)
    at = at_address(run.session_id)
    at.switch_page("views/history.py").run()
    (picker,) = [s for s in at.selectbox if s.label == "Answer to change"]
    drawn_for = picker.value
    target = next(a for a in run.answers[:5] if a.value == run.answers[-1].value and a.label_id != drawn_for)
    names = {value: answer_words(value, run.class_names) for value in run.class_names}  # ("Positive (8)")
    picker.select(target.label_id)  # not run: the click below goes with it
    (change,) = [b for b in at.button if test_app.as_shown(b.label) == f"Change to {names[-target.value]}"]
    change.click().run()
    assert not at.exception, at.exception
    assert any(f"Item {target.item_index} changed from" in s for s in test_app.shown(at.success))
    events = {e.label_id: e.value for e in repo.label_events(svc.engine, run.session_id)}
    assert events[target.label_id] == -target.value and events[drawn_for] == run.answers[-1].value


#: class names and an annotator name written as Markdown: a link, an image the browser would fetch
MARKDOWN_POSITIVE, MARKDOWN_NEGATIVE = "![p](http://127.0.0.1:9/pos.png)", "[n](http://127.0.0.1:9/neg) **b**"
MARKDOWN_NAME = "![a](http://127.0.0.1:9/a.png) :red[x]"


def test_class_and_annotator_names_are_plain_text_in_buttons_and_tooltips(db_url):
    from app.ui.text import plain

    svc = MarginLab.from_url(db_url)
    rng = np.random.default_rng(0)
    rows = "".join(
        f"{x:.3f},{y:.3f},{MARKDOWN_POSITIVE if k % 2 else MARKDOWN_NEGATIVE}\n"
        for k, (x, y) in enumerate(rng.normal(size=(40, 2)))
    )
    dataset_id = svc.import_csv(
        f"x,y,label\n{rows}".encode(), name="md", label_column="label", positive=MARKDOWN_POSITIVE, eval_fraction=0.0
    ).dataset_id
    svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random")  # (two annotators)
    run = svc.start_session(dataset_id=dataset_id, annotator=MARKDOWN_NAME, strategy="random", seed=1)
    for value in (1, -1, 1):
        run.answer(value, item_index=run.shown.item_index)
    at = at_address(run.session_id, user=MARKDOWN_NAME)  # someone whose name is Markdown, signed in
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    (change,) = [b for b in at.button if b.key and b.key.startswith("change_")]
    other = answer_words(-run.answers[-1].value, run.class_names)
    assert change.label == f"Change to {plain(other)}"  # every punctuation mark escaped: no image, no link
    assert test_app.as_shown(change.label) == f"Change to {other}"
    # the toggle between one's own sessions and everyone's names the signed-in person in its tooltip
    toggle = at.toggle(key="all_annotators_history")
    assert toggle.help == f"Off: the sessions of {plain(MARKDOWN_NAME)} only.", toggle.help


def test_sessions_are_renamed_closed_and_reopened(db_url):
    svc = MarginLab.from_url(db_url)
    run = labelled(svc, n=2)
    at = start_app()
    at.switch_page("views/sessions.py").run()
    assert not at.exception, at.exception
    at.text_input(key=f"session_name_{run.session_id}").input("<b>first pass</b>")
    at.button(key=f"rename_{run.session_id}").click().run()
    assert repo.get_session(svc.engine, run.session_id).name == "<b>first pass</b>"
    assert any("is now called '<b>first pass</b>'" in s for s in test_app.shown(at.success))
    at.button(key=f"close_{run.session_id}").click().run()
    assert repo.get_session(svc.engine, run.session_id).status == "closed"
    at.switch_page("views/label.py").run()
    assert any("Start a session" in i.value for i in at.info)  # no open session left to label
    at.switch_page("views/sessions.py").run()
    at.button(key=f"reopen_{run.session_id}").click().run()
    assert repo.get_session(svc.engine, run.session_id).status == "active"
    at.switch_page("views/label.py").run()
    assert test_app.progress(at) == (2, 0)
    assert any("first pass" in o for o in [s for s in at.selectbox if s.label == "Session"][0].options)


def test_deleting_a_dataset_says_what_goes_and_needs_its_name(db_url):
    svc = MarginLab.from_url(db_url)
    run = labelled(svc, n=3)
    cancer = svc.import_bundled("breast-cancer").dataset_id
    at = start_app()
    at.switch_page("views/data.py").run()
    at.selectbox(key="delete_dataset_id").select(run.info.dataset_id).run()
    (warning,) = test_app.shown(at.warning)
    assert warning.startswith(
        "Deleting 'digits: 8 vs rest' removes its 1,797 items, 1 labelling session (ada) "
        "with 3 stored answers and 0 comparisons"
    ), warning
    button = at.button(key=f"delete_{run.info.dataset_id}")
    assert button.disabled
    at.text_input(key=f"delete_confirm_{run.info.dataset_id}").input("digits").run()
    assert at.button(key=f"delete_{run.info.dataset_id}").disabled
    assert len(svc.datasets()) == 2
    at.text_input(key=f"delete_confirm_{run.info.dataset_id}").input("digits: 8 vs rest").run()
    at.button(key=f"delete_{run.info.dataset_id}").click().run()
    assert not at.exception, at.exception
    assert [d.id for d in svc.datasets()] == [cancer] and repo.list_sessions(svc.engine) == []
    assert any("Deleted dataset 'digits: 8 vs rest'" in s for s in test_app.shown(at.success))


def test_the_history_of_a_session_whose_model_cannot_be_rebuilt_is_still_readable(db_url):
    from tests.app.test_app_robustness import N_LABELS, _retired_heuristic

    svc = MarginLab.from_url(db_url)
    session_id = _retired_heuristic(svc.engine)
    at = at_address(session_id)
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    assert any("could not be rebuilt" in e for e in test_app.shown(at.error))
    (table,) = [df.value for df in at.dataframe if "as given" in df.value.columns]
    assert len(table) == N_LABELS
    [b for b in at.button if b.label == "Remove this answer"][0].click().run()
    assert not at.exception, at.exception
    assert len(repo.label_events(svc.engine, session_id)) == N_LABELS  # refused: nothing changed
