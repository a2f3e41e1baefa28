"""The Streamlit app through ``streamlit.testing.v1.AppTest`` (no browser), page by page.

Every test runs the real entry point ``app/main.py`` against its own temporary
SQLite database (``MARGINLAB_DATABASE_URL``) and checks what ended up in the
database, not only that the page rendered.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from app.services import DEFAULT_SOLVER, DEMO_NAME, MarginLab, ServiceError
from app.services.vocabulary import heuristic_words
from app.ui.tables import ALC, WSS_95, WTL
from storage import repository as repo

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

MAIN = str(Path(__file__).resolve().parents[2] / "app" / "main.py")
# A script run's limit guards against a hang only: on a loaded machine a page that runs a comparison takes
# minutes (the suite's own limit per test, pyproject's timeout, stays the bound)
TIMEOUT = 600


#: the password of every account the tests sign in with (the first owner's comes from the environment)
PASSWORD = "test-password-1"


@pytest.fixture
def db_url(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'app.db'}"
    monkeypatch.setenv("MARGINLAB_DATABASE_URL", url)
    monkeypatch.setenv("MARGINLAB_OWNER_PASSWORD", PASSWORD)
    return url


def ensure_account(url: str, name: str, role: str = "owner", password: str = PASSWORD) -> None:
    """An account to sign in with (created in the database as an owner would, when missing)."""
    from app.services.accounts import hash_password
    from storage import teams
    from storage.engine import init_db, make_engine

    engine = make_engine(url)
    try:
        init_db(engine)
        if teams.get_account(engine, name) is None:
            teams.create_account(engine, name=name, role=role, password_hash=hash_password(password))
    finally:
        engine.dispose()


def sign_in(at: AppTest, name: str, password: str = PASSWORD) -> AppTest:
    """Sign in through the sign-in page, as a person would."""
    assert [t.value for t in at.title] == ["Sign in"], [t.value for t in at.title]
    at.text_input(key="sign_in_name").input(name)
    at.text_input(key="sign_in_password").input(password)
    at.button(key="sign_in_submit").click().run()
    assert not at.exception, at.exception
    assert at.session_state["identity"].name == name, [e.value for e in at.error]
    return at


def anonymous_app() -> AppTest:
    """A new browser session on the app, nobody signed in."""
    at = AppTest.from_file(MAIN, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    return at


def start_app(user: str = "ada", role: str = "owner") -> AppTest:
    """A new browser session on the app, signed in as ``user`` (an account created for it when missing)."""
    import os

    at = AppTest.from_file(MAIN, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    ensure_account(os.environ["MARGINLAB_DATABASE_URL"], user, role)
    return sign_in(at, user)


def as_shown(markdown: str) -> str:
    """What an element's Markdown source shows: backslash escapes resolved and the invisible
    word joiners ``app.ui.text.plain`` adds dropped."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).replace("\u2060", "")


def shown(elements) -> list[str]:
    """The texts of alert, caption or Markdown elements as the browser shows them."""
    return [as_shown(e.value) for e in elements]


def texts(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown] + [c.value for c in at.caption]


def shown_item(at: AppTest) -> int:
    for text in texts(at):
        match = re.match(r"\*\*Item (\d+)\*\*", text)
        if match:
            return int(match.group(1))
    raise AssertionError(f"no item on the Label page: {texts(at)}")


def progress(at: AppTest) -> tuple[int, int]:
    for text in texts(at):
        match = re.match(r"\*\*(\d+)\*\* labels? \(\d+ positive\) · \*\*(\d+)\*\* skips?", text)
        if match:
            return int(match.group(1)), int(match.group(2))
    raise AssertionError(f"no progress read-out: {texts(at)}")


def click(at: AppTest, name: str) -> None:
    """Click the Positive / Negative / Skip / Undo button (their keys carry the item)."""
    (button,) = [b for b in at.button if b.key and b.key.startswith(f"{name}_")]
    button.click().run()
    assert not at.exception, at.exception


def start_session(at: AppTest, annotator: str = "ada", strategy: str = "near-boundary", dataset_id=None) -> None:
    assert at.session_state["identity"].name == annotator  # labels go under the signed-in name
    at.selectbox(key="new_strategy").select(strategy)
    if dataset_id is not None:
        at.selectbox(key="new_dataset").select(dataset_id)
    at.button(key="start_session").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def run_comparison(at: AppTest, strategies=None, budget=12, seeds=1, initial=4, model=None) -> None:
    """Fill in the Compare page's form and run the comparison (None: leave a field as the page offers it)."""
    if strategies is not None:
        at.multiselect[0].set_value(strategies)
    if model is not None:
        at.radio(key="compare_model").set_value(model)
    numbers = {n.label: n for n in at.number_input}
    for label, value in (("Label budget", budget), ("Seeds", seeds), ("Initial labels", initial)):
        if value is not None:
            numbers[label].set_value(value)
    [b for b in at.button if b.label == "Run the comparison"][0].click().run()
    assert not at.exception, at.exception


def service(url: str) -> MarginLab:
    return MarginLab.from_url(url)


# --------------------------------------------------------------------------- first start and every page


def test_first_start_imports_the_demo_and_every_page_renders(db_url):
    at = start_app()
    assert [t.value for t in at.title] == ["Label"]  # the default page
    engine = service(db_url).engine
    (demo,) = repo.list_datasets(engine)
    assert demo.name == DEMO_NAME and demo.n_items == 1797 and demo.has_true_labels
    assert demo.display_kind == "image" and demo.image_shape == (8, 8)

    for page, title in (
        ("views/data.py", "Data"),
        ("views/compare.py", "Compare heuristics"),
        ("views/export.py", "Export"),
        ("views/label.py", "Label"),
    ):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert [t.value for t in at.title] == [title]
    # a second start of the app does not import the demo again
    start_app()
    assert len(repo.list_datasets(engine)) == 1


# --------------------------------------------------------------------------- Label


def test_label_with_the_buttons_undo_skip_and_switch_pages(db_url):
    at = start_app()
    start_session(at, "ada", "near-boundary")
    engine = service(db_url).engine
    (session,) = repo.list_sessions(engine)
    assert (session.annotator, session.strategy, session.solver) == ("ada", "near-boundary", "incremental")
    assert len(at.get("plotly_chart")) == 5  # ROC, AUC, support vectors, margin, gain curve

    y_true = repo.load_dataset_arrays(engine, session.dataset_id)[1]
    asked, given = [], []
    while len(given) < 8 or len(set(given[-3:])) < 2 and len(given) < 40:
        # label following the true labels until both classes are in and a few more
        item = shown_item(at)
        value = int(y_true[item])
        asked.append(item)
        given.append(value)
        click(at, "positive" if value == 1 else "negative")
        assert not at.exception, at.exception
        if len(given) >= 8 and {1, -1} <= set(given[:-3]):
            break
    n = len(given)
    events = repo.label_events(engine, session.id)
    assert [e.item_index for e in events] == asked
    assert [e.value for e in events] == given
    assert progress(at) == (n, 0)
    assert all(e.decision_value is not None for e in events)
    # provenance: cold-start picks say so; once both classes are labelled the heuristic asks
    assert {1, -1} <= set(given)
    for k, event in enumerate(events):
        expected = "near-boundary" if {1, -1} <= set(given[:k]) else "random (cold start)"
        assert event.strategy == expected, (k, given[: k + 1], event.strategy)

    # Undo: the label is gone from the database and the same item is asked again
    click(at, "undo")
    assert not at.exception
    assert len(repo.label_events(engine, session.id)) == n - 1
    assert shown_item(at) == asked[-1]
    assert progress(at) == (n - 1, 0)

    click(at, "skip")
    events = repo.label_events(engine, session.id)
    assert [e.value for e in events][-1] == 0 and events[-1].item_index == asked[-1]
    assert progress(at) == (n - 1, 1)
    after_skip = shown_item(at)

    # switching pages and back shows the same session and item
    at.switch_page("views/data.py").run()
    assert not at.exception
    at.switch_page("views/label.py").run()
    assert not at.exception
    assert progress(at) == (n - 1, 1)
    assert shown_item(at) == after_skip


def test_an_image_item_is_drawn_in_the_page_itself_pixel_for_pixel(db_url):
    """A digits item is an SVG inside the page (a data URL: nothing left for the browser to fetch once
    the item has arrived) drawn from the item's own pixels."""
    import base64

    from app.ui.item import pixel_svg

    at = start_app()
    start_session(at, "ada", "near-boundary")
    item = shown_item(at)
    (session,) = repo.list_sessions(service(db_url).engine)
    pixels = service(db_url).open_session(session.id).item_display.image(item)
    (url,) = [url for element in at.get("image") for url in element.value]
    prefix = "data:image/svg+xml;base64,"
    assert url.startswith(prefix)
    assert base64.b64decode(url[len(prefix) :]).decode() == pixel_svg(pixels, 24)  # 8 x 8, 24-pixel cells


def test_pixel_svg_draws_one_square_per_inked_pixel_in_its_grey():
    from app.ui.item import pixel_svg

    svg = pixel_svg(np.array([[0.0, 1.0, 0.5], [np.nan, 0.25, 2.0]]), cell=10)
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 3 2" width="30" height="20"')
    cells = re.findall(r'<rect x="(\d+)" y="(\d+)" width="1" height="1" fill="#(\w{6})"/>', svg)
    # ink 0 (and a missing value) is the white background; more ink is darker; beyond 1 is black
    assert cells == [("1", "0", "000000"), ("2", "0", "808080"), ("1", "1", "bfbfbf"), ("2", "1", "000000")]
    assert svg.count("<rect") == 1 + len(cells) and svg.endswith("</svg>")


def test_a_large_picture_is_a_png_and_a_small_one_an_svg():
    from app.ui.item import item_picture

    small, width = item_picture(np.full((64, 64), 0.5))
    assert isinstance(small, str) and small.startswith("<svg") and width == 64 * 4
    large, width = item_picture(np.eye(65))  # ink on the diagonal
    assert isinstance(large, np.ndarray) and large.shape == (65 * 4, 65 * 4) and width == 65 * 4
    assert large[0, 0] == 0.0 and large[0, 4] == 1.0  # dark ink on white, 4-pixel cells


def test_new_tab_resumes_the_most_recent_session(db_url):
    at = start_app()
    start_session(at, "ada", "random")
    for key in ("positive", "negative", "negative"):
        click(at, key)
    shown = shown_item(at)
    second_tab = start_app()  # a fresh browser session on the same server
    assert progress(second_tab) == (3, 0)
    assert shown_item(second_tab) == shown
    # its first view of the panel is marked: the charts waited longer for the browser to draw the item
    assert second_tab.session_state["label_charts_sent"] is True


def test_the_label_panel_waits_longer_before_its_charts_on_a_first_view():
    from app.ui.item import FIRST_VIEW_PAUSE_S, ITEM_FIRST_PAUSE_S, pause_before_charts

    state = {}
    assert pause_before_charts(state) == FIRST_VIEW_PAUSE_S
    assert state == {"label_charts_sent": True}
    assert [pause_before_charts(state) for _ in range(2)] == [ITEM_FIRST_PAUSE_S] * 2
    assert FIRST_VIEW_PAUSE_S > ITEM_FIRST_PAUSE_S


def test_session_on_a_dataset_without_true_labels_titles_the_roc_as_scores_when_asked(db_url, tmp_path):
    svc = service(db_url)
    svc.ensure_demo_dataset()
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-1, 1, (30, 3)), rng.normal(1, 1, (30, 3))])
    texts_column = [f"message number {k}" for k in range(60)]
    csv = "a,b,c,text\n" + "\n".join(f"{x[0]},{x[1]},{x[2]},{t}" for x, t in zip(X, texts_column, strict=True))
    result = svc.import_csv(csv.encode(), name="messages", display="text", text_column="text")
    assert result.created
    at = start_app("bo")
    start_session(at, "bo", "near-boundary", dataset_id=result.dataset_id)
    item = shown_item(at)
    assert [t.value for t in at.text] == [f"message number {item}"]  # shown as its text
    truth = (np.arange(60) >= 30).astype(int) * 2 - 1
    for _ in range(6):
        item = shown_item(at)
        click(at, "positive" if truth[item] == 1 else "negative")
        assert not at.exception
    (session,) = [s for s in repo.list_sessions(svc.engine) if s.dataset_id == result.dataset_id]
    run = svc.open_session(session.id)
    assert not run.has_evaluation
    roc = run.roc()
    if roc is not None:
        assert "scores when asked" in roc[3]
    figures = at.get("plotly_chart")
    assert len(figures) == 5  # ROC, AUC, support vectors, margin, gain curve


# --------------------------------------------------------------------------- service guarantees behind the page


def _labelled_run(
    svc: MarginLab, strategy: str, n: int, seed: int = 0, solver: str | None = None, eval_fraction: float | None = None
):
    """A session on the demo answered ``n`` times as the true labels say (``eval_fraction``: an evaluation
    split asked for; none by default)."""
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    run = svc.start_session(
        dataset_id=dataset_id, annotator="cy", strategy=strategy, seed=seed, solver=solver, eval_fraction=eval_fraction
    )
    for _ in range(n):
        item = run.shown.item_index
        run.answer(int(run.y_true[item]), item_index=item)
    return run


def test_double_submit_stores_one_label_and_says_so(db_url):
    svc = service(db_url)
    run = _labelled_run(svc, "near-boundary", 3)
    item = run.shown.item_index
    first = run.answer(-1, item_index=item)
    second = run.answer(-1, item_index=item)  # the same click delivered twice
    assert first.ok and not second.ok
    assert "already answered" in second.message
    events = repo.label_events(svc.engine, run.session_id)
    assert [e.item_index for e in events].count(item) == 1 and len(events) == 4

    # a double click on Undo undoes one answer only
    last = run.answers[-1].item_index
    assert run.undo(last_item_index=last).ok
    second_undo = run.undo(last_item_index=last)
    assert not second_undo.ok and "already undone" in second_undo.message
    assert len(repo.label_events(svc.engine, run.session_id)) == 3
    assert run.answer(-1, item_index=last).ok  # the undone item is asked again

    # a second process holding a stale view of the session submits the same item
    other = MarginLab(svc.engine)
    stale = other.open_session(run.session_id)
    item = run.shown.item_index
    assert stale.shown.item_index == item
    assert run.answer(1, item_index=item).ok
    outcome = stale.answer(1, item_index=item)
    assert not outcome.ok and "already" in outcome.message
    assert len(repo.label_events(svc.engine, run.session_id)) == 5
    assert len(stale.answers) == 5  # the stale view followed the database
    np.testing.assert_allclose(stale.loop.pool_scores(), run.loop.pool_scores(), atol=1e-9)


@pytest.mark.parametrize("strategy", ["near-boundary", "randomized-search", "ramp-region"])
def test_undo_restores_the_exact_previous_model(db_url, strategy):
    svc = service(db_url)
    run = _labelled_run(svc, strategy, 12, eval_fraction=0.3)  # (its evaluation scores are checked too)
    before = run.loop.pool_scores()
    shown = run.shown
    assert run.answer(1, item_index=shown.item_index).ok
    assert not np.allclose(run.loop.pool_scores(), before)
    assert run.undo().ok
    np.testing.assert_allclose(run.loop.pool_scores(), before, rtol=0, atol=1e-9)
    X_eval = run.X[run.eval_items]
    np.testing.assert_allclose(run.evaluation_scores(), run.loop.solver.decision_function(X=X_eval), rtol=0, atol=1e-9)
    assert len(run.history()) == run.n_labels
    assert run.shown.item_index == shown.item_index
    assert len(repo.label_events(svc.engine, run.session_id)) == 12


@pytest.mark.parametrize(
    "strategy, solver",
    [
        ("near-boundary", None),
        ("largest-positive", None),
        ("randomized-search", None),
        ("autoactive", None),
        ("ramp-region", None),
        ("random", None),
        ("near-boundary", "active-set"),
        ("near-boundary", "lasvm"),
    ],
)
def test_restart_rebuilds_the_same_labels_and_model(db_url, strategy, solver):
    svc = service(db_url)
    run = _labelled_run(svc, strategy, 15, solver=solver, eval_fraction=0.3)  # (and its evaluation split)
    run.skip(item_index=run.shown.item_index)
    restarted = service(db_url).open_session(run.session_id)  # a new process on the same file
    assert restarted is not run
    assert [(a.item_index, a.value) for a in restarted.answers] == [(a.item_index, a.value) for a in run.answers]
    np.testing.assert_allclose(restarted.loop.pool_scores(), run.loop.pool_scores(), rtol=0, atol=1e-9)
    assert restarted.shown.item_index == run.shown.item_index
    assert restarted.n_labels == 15 and restarted.n_skips == 1
    assert restarted.loop.solver.name == (solver or DEFAULT_SOLVER[strategy])
    # the learning curve is rebuilt too, and the evaluation scores are the model's decision values
    live, rebuilt = run.history(), restarted.history()
    np.testing.assert_allclose(rebuilt["auc"], live["auc"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(rebuilt["n_sv"], live["n_sv"])
    X_eval = run.X[run.eval_items]
    np.testing.assert_allclose(run.evaluation_scores(), run.loop.solver.decision_function(X=X_eval), rtol=0, atol=1e-9)
    from core.metrics import roc_auc

    assert live["auc"].iloc[-1] == pytest.approx(
        roc_auc(run.y_true[run.eval_items], run.loop.solver.decision_function(X=X_eval))
    )


# --------------------------------------------------------------------------- Data


def test_data_page_adds_a_bundled_dataset_once(db_url):
    at = start_app()
    at.switch_page("views/data.py").run()
    at.selectbox(key="bundled_name").select("breast-cancer").run()
    assert at.selectbox(key="bundled_positive_breast-cancer").value == "malignant"
    at.button(key="bundled_add").click().run()
    assert not at.exception, at.exception
    engine = service(db_url).engine
    datasets = {d.name: d for d in repo.list_datasets(engine)}
    assert sorted(datasets) == sorted([DEMO_NAME, "breast-cancer"])
    cancer = datasets["breast-cancer"]
    assert cancer.n_items == 569 and cancer.has_true_labels and cancer.display_kind == "table"
    assert any("Imported" in s.value for s in at.success)
    # the same data again: a message naming the existing dataset, nothing added
    at.button(key="bundled_add").click().run()
    assert not at.exception
    assert len(repo.list_datasets(engine)) == 2
    assert any("already imported" in i.value for i in at.info)
    # a session on it shows each item as a compact table row
    at.switch_page("views/label.py").run()
    start_session(at, "ada", "random", dataset_id=cancer.id)
    assert any(len(df.value) == cancer.n_features for df in at.dataframe)


def test_csv_errors_name_the_row_and_column_and_change_nothing(db_url):
    from core.datasets import DataError

    svc = service(db_url)
    svc.ensure_demo_dataset()
    bad = b"a,b,label\n1,2,yes\n3,oops,no\n5,6,yes\n"
    with pytest.raises(ServiceError) as error:  # the service's own error, the reader's as its cause
        svc.import_csv(bad, name="bad", label_column="label", positive="yes")
    assert isinstance(error.value.__cause__, DataError) and str(error.value) == str(error.value.__cause__)
    message = str(error.value)
    assert "'b'" in message or "column b" in message
    assert "row 2" in message
    assert len(svc.datasets()) == 1
    good = b"a,b,label\n1,2,yes\n3,4,no\n5,6,yes\n7,9,maybe\n"
    result = svc.import_csv(good, name="good", label_column="label", positive="yes", scaling="standard")
    info = svc.dataset(result.dataset_id)
    assert info.has_true_labels and info.meta["scaling"] == "standard"
    y = repo.load_dataset_arrays(svc.engine, result.dataset_id)[1]
    assert y.tolist() == [1, -1, 1, -1]


# --------------------------------------------------------------------------- Compare


def test_compare_page_runs_the_heuristics_with_the_review_model(db_url):
    svc = service(db_url)
    at = start_app()
    at.switch_page("views/compare.py").run()
    run_comparison(at, ["largest-positive", "random"], budget=14, seeds=1, initial=None, model="review")
    assert not at.error, [e.value for e in at.error]
    (stored,) = svc.comparisons()
    comparison = svc.comparison(stored.id)
    assert set(comparison.rows["solver"]) == {"ramp"}
    assert comparison.config["solver_params"]["class_weight"] == "balanced"
    assert not [b for b in at.button if b.label == "Cancel"]  # the run is over: nothing left to cancel
    with pytest.raises(ServiceError, match="runs on the ramp solver"):
        svc.run_comparison(stored.dataset_id, strategies=["random"], solver="incremental", model="review")


def test_compare_page_runs_stores_and_reloads_a_comparison(db_url):
    svc = service(db_url)
    run = _labelled_run(svc, "near-boundary", 6)  # a labelling session to overlay
    at = start_app()
    at.switch_page("views/compare.py").run()
    assert not at.exception
    run_comparison(at, ["near-boundary", "random"], budget=16, seeds=2, initial=6)
    (stored,) = svc.comparisons()
    comparison = svc.comparison(stored.id)
    rows = comparison.rows
    assert set(rows["strategy"]) == {"near-boundary", "random"}
    assert set(rows["seed"]) == {0, 1}
    assert rows.groupby(["strategy", "seed"])["n_labels"].max().eq(16).all()
    summary = svc.summary_frame(comparison)
    assert list(summary["strategy"]) == ["near-boundary", "random"]
    assert len(at.get("plotly_chart")) == 4  # AUC, support vectors, latency, recall
    assert any(len(df.value) == 2 for df in at.dataframe)  # the summary table
    overlay = svc.session_curves(run.info.dataset_id)
    assert set(overlay["session"]) == {f"session {run.session_id} (cy, near-boundary)"}
    assert overlay["n_labels"].max() == 6

    # reloading the page shows the stored comparison again
    again = start_app()
    again.switch_page("views/compare.py").run()
    assert not again.exception
    assert len(again.get("plotly_chart")) == 4


# --------------------------------------------------------------------------- Export


def test_export_page_and_files_carry_labels_provenance_and_model_state(db_url):
    import io
    import json

    from core.solvers.base import OnlineSolver

    svc = service(db_url)
    run = _labelled_run(svc, "near-boundary", 9, eval_fraction=0.3)  # (the model is compared on held-out items)
    run.skip(item_index=run.shown.item_index)
    at = start_app()
    at.switch_page("views/export.py").run()
    assert not at.exception, at.exception
    assert len(at.get("download_button")) == 3

    import pandas as pd

    frame = pd.read_csv(io.BytesIO(svc.export_labels("csv", session_id=run.session_id)))
    assert len(frame) == 9  # skips left out
    labelled = [a for a in run.answers if a.value != 0]
    assert frame["item_index"].tolist() == [a.item_index for a in labelled]
    assert frame["label_value"].tolist() == [a.value for a in labelled]
    assert frame["label"].astype(str).tolist() == ["8" if a.value == 1 else "rest" for a in labelled]  # class names
    assert set(frame["annotator"]) == {"cy"} and frame["labelled_at"].notna().all()
    # the scores the model gave when it asked; none for the cold start, when there was no model to ask
    cold = frame["strategy"].str.contains("cold start").to_numpy()
    assert cold.any()  # (this session never left its cold start: no positive among 9 random items)
    assert frame["decision_value"][cold].isna().all()
    asked = [a.score for a, c in zip(labelled, cold, strict=True) if not c]
    np.testing.assert_allclose(frame["decision_value"][~cold], asked, rtol=0, atol=1e-12)
    assert frame["model_version"].tolist() == list(range(9))
    jsonl = svc.export_labels("jsonl", annotator="cy", include_skips=True).decode().strip().splitlines()
    assert len(jsonl) == 10
    records = [json.loads(line) for line in jsonl]
    assert [r["item_index"] for r in records] == [a.item_index for a in run.answers]
    assert records[-1]["label_value"] == 0 and records[-1]["label"] == "skipped"

    blob = run.model_state()
    with np.load(io.BytesIO(blob), allow_pickle=False) as archive:
        meta = json.loads(str(archive["__meta__"]))
        pool_items = archive["pool_items"]
    assert meta["session_id"] == run.session_id and meta["n_labels"] == 9
    solver = OnlineSolver.load(io.BytesIO(blob))
    X_eval = run.X[run.eval_items]
    np.testing.assert_allclose(
        solver.decision_function(X=X_eval), run.loop.solver.decision_function(X=X_eval), rtol=0, atol=1e-9
    )
    np.testing.assert_array_equal(pool_items, run.pool_items)


def test_a_closed_session_refuses_labels_with_a_message(db_url):
    svc = service(db_url)
    run = _labelled_run(svc, "random", 2)
    repo.close_session(svc.engine, run.session_id)
    outcome = run.answer(1, item_index=run.shown.item_index)
    assert not outcome.ok and outcome.kind == "error" and "Nothing was recorded" in outcome.message
    assert not run.undo().ok
    assert len(repo.label_events(svc.engine, run.session_id)) == 2
    assert run.n_labels == 2
    at = start_app()  # the Label page offers active sessions only
    assert [s.id for s in svc.sessions(status="active")] == []
    assert any("Start a session" in i.value for i in at.info)


def test_ramp_region_progress_counts_the_items_the_stream_has_seen(db_url):
    at = start_app("ra")
    start_session(at, "ra", "ramp-region")
    for key in ("negative", "positive", "negative", "negative", "skip"):
        click(at, key)
        assert not at.exception
    svc = service(db_url)
    (session,) = repo.list_sessions(svc.engine)
    assert session.solver == "ramp"
    run = svc.open_session(session.id)
    seen_text = [t for t in texts(at) if "items seen by the stream" in t]
    assert seen_text, texts(at)
    seen = int(re.search(r"\*\*(\d+)\*\* items seen", seen_text[0]).group(1))
    assert seen == run.n_seen >= 5  # asked items count as seen, passed-over ones too
    assert progress(at) == (4, 1)


def test_a_run_holds_its_scaled_features_once_and_finds_any_items_row(db_url):
    from app.services.common import scale_features

    svc = service(db_url)
    run = _labelled_run(svc, "near-boundary", 6, eval_fraction=0.3)  # rows in the pool and held out
    whole = scale_features(run.X_raw, run.scaling)
    assert run.has_evaluation and len(run.pool_items) + len(run.eval_items) == len(run.X_raw)
    assert np.shares_memory(run.loop.X, run.pool_X)  # the loop and the solver learn on the run's own rows
    for item in (int(run.pool_items[3]), int(run.eval_items[0]), int(run.eval_items[-1]), len(run.X_raw) - 1):
        np.testing.assert_array_equal(run.X[item], whole[item])
    mixed = np.array([run.eval_items[2], run.pool_items[0], run.eval_items[0], run.pool_items[9]])
    np.testing.assert_array_equal(run.X[mixed], whole[mixed])
    np.testing.assert_array_equal(np.asarray(run.X), whole)
    with pytest.raises(IndexError, match="not in this dataset"):
        run.X[len(run.X_raw)]
    positions = run.pool_of_item
    assert positions[int(run.pool_items[5])] == 5 and int(run.eval_items[0]) not in positions
    assert -1 not in positions and "3" not in positions and len(positions) == len(run.pool_items)
    with pytest.raises(KeyError):
        positions[int(run.eval_items[0])]


def test_a_standardised_dataset_is_labelled_on_scaled_features(db_url):
    svc = service(db_url)
    rng = np.random.default_rng(1)
    X = rng.normal([100.0, -5.0], [20.0, 0.1], size=(40, 2))
    y = np.where(X[:, 0] > 100, "big", "small")
    csv = "u,v,kind\n" + "\n".join(f"{a},{b},{c}" for (a, b), c in zip(X, y, strict=True))
    result = svc.import_csv(csv.encode(), name="scaled", label_column="kind", positive="big", scaling="standard")
    run = svc.start_session(dataset_id=result.dataset_id, annotator="sc", strategy="random")
    np.testing.assert_allclose(np.asarray(run.X).mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(run.X).std(axis=0), 1, atol=1e-12)
    # the database keeps the raw values; the run reads the rows it shows from there (it does not hold them)
    assert not isinstance(run.X_raw, np.ndarray) and len(run.X_raw) == 40
    np.testing.assert_allclose(run.X_raw[np.arange(40)], X, rtol=1e-15)
    assert run.item_display.features(7).iloc[0].tolist() == pytest.approx(X[7].tolist())
    assert run.X_raw[7] is run.X_raw[7]  # a row shown again is not read again
    with pytest.raises(IndexError, match="not in this dataset"):
        run.X_raw[40]
    csv_raw = "u,v,kind\n" + "\n".join(f"{a + 1},{b},{c}" for (a, b), c in zip(X, y, strict=True))  # new content
    unscaled = svc.import_csv(csv_raw.encode(), name="raw", label_column="kind", positive="big", scaling="none")
    plain = svc.start_session(dataset_id=unscaled.dataset_id, annotator="sc", strategy="random")
    assert plain.X_raw is plain.X and plain.item_display.features(3).iloc[0].tolist() == [X[3, 0] + 1, X[3, 1]]


def test_learning_curve_bands_are_mean_and_std_over_seeds():
    import pandas as pd

    from app import charts

    rng = np.random.default_rng(3)
    rows = pd.DataFrame(
        [
            {
                "strategy": s,
                "solver": "lasvm",
                "seed": seed,
                "n_labels": n,
                "auc": rng.random(),
                "n_sv": rng.integers(1, 9),
                "update_ms": rng.random(),
                "query_ms": rng.random(),
            }
            for s in ("random", "near-boundary")
            for seed in range(4)
            for n in range(1, 6)
        ]
    )
    bands = charts.curve_bands(rows, "auc")
    for (series, n), part in rows.groupby(["strategy", "n_labels"]):
        band = bands[(bands["series"] == heuristic_words(series)) & (bands["n_labels"] == n)].iloc[0]
        assert band["mean"] == pytest.approx(part["auc"].mean())
        assert band["std"] == pytest.approx(part["auc"].std(ddof=1))
    figure = charts.learning_curve_figure(rows, "auc")
    named = [trace["name"] for trace in figure["data"] if "name" in trace]
    # one mean line per heuristic, each with its band, named in words (the legend is the screener's)
    assert sorted(named) == sorted(charts.plotly_text(heuristic_words(s)) for s in ("near-boundary", "random"))
    assert len(figure["data"]) == 4
    # several seeds: the title says the band is a spread over them; the band stays within an AUC's [0, 1]
    assert figure["layout"]["title"]["text"].endswith("(average over seeds; the band: ± one standard deviation)")

    def band_values(figure):
        return [y for trace in figure["data"] if trace.get("fill") == "toself" for y in trace["y"]]

    near_one = charts.learning_curve_figure(rows.assign(auc=np.where(rows["seed"] == 3, 0.6, 1.0)), "auc")
    assert max(band_values(near_one)) == 1.0  # (mean 0.9 + std 0.2 would be 1.1)
    counts = charts.learning_curve_figure(rows.assign(n_sv=np.where(rows["seed"] == 3, 8, 0)), "n_sv")
    assert min(band_values(counts)) == 0.0  # (mean 2 - std 4 would be -2)
    one_seed = charts.learning_curve_figure(rows[rows["seed"] == 0], "auc")
    assert "seeds" not in one_seed["layout"]["title"]["text"]
    import plotly.graph_objects as go

    go.Figure(figure)  # a valid Plotly figure
    go.Figure(charts.latency_figure(rows))


# --------------------------------------------------------------------------- found by using the app


def _chart_texts(at: AppTest, index: int) -> str:
    """The JSON spec of the ``index``-th Plotly chart on the page (titles, annotations, traces)."""
    return at.get("plotly_chart")[index].proto.spec


def test_keys_do_not_label_while_the_new_session_form_is_open(db_url):
    """The New session popover covers the item: Positive/Negative/Skip/Undo (and their
    shortcut keys) are disabled while it is open, and come back when it closes."""
    at = start_app()
    start_session(at, "ada", "random")
    click(at, "positive")
    at.session_state["new_session_popover"] = True  # the person opened New session
    at.run()
    assert not at.exception, at.exception
    buttons = {
        b.key.split("_")[0]: b
        for b in at.button
        if b.key and b.key.split("_")[0] in ("positive", "negative", "skip", "undo")
    }
    assert set(buttons) == {"positive", "negative", "skip", "undo"}
    assert all(b.disabled for b in buttons.values()), {k: b.disabled for k, b in buttons.items()}
    assert any("paused while **New session** is open" in t for t in texts(at))
    at.session_state["new_session_popover"] = False
    at.run()
    buttons = [b for b in at.button if b.key and b.key.split("_")[0] in ("positive", "negative", "skip", "undo")]
    assert not any(b.disabled for b in buttons)


def test_gamma_that_is_not_a_number_is_refused_with_a_clear_message(db_url):
    at = start_app()
    at.text_input(key="new_gamma").input("abc")
    at.button(key="start_session").click().run()
    assert not at.exception, at.exception
    errors = shown(at.error)
    assert errors and "gamma must be 'scale' or a positive number" in errors[0] and "'abc'" in errors[0], errors
    assert repo.list_sessions(service(db_url).engine) == []
    at.text_input(key="new_gamma").input("-2")
    at.button(key="start_session").click().run()
    assert "gamma must be 'scale' or a positive number" in shown(at.error)[0]
    assert repo.list_sessions(service(db_url).engine) == []


@pytest.mark.parametrize("C, gamma", [(1e-6, "1e-9"), (1e6, "1e3")])
def test_extreme_C_and_gamma_start_and_label(db_url, C, gamma):
    at = start_app()
    at.number_input(key="new_C").set_value(C)
    at.text_input(key="new_gamma").input(gamma)
    start_session(at, "ada", "near-boundary")
    (session,) = repo.list_sessions(service(db_url).engine)
    assert session.params["solver_params"]["C"] == C and session.params["solver_params"]["gamma"] == float(gamma)
    for key in ("positive", "negative", "negative", "positive"):
        click(at, key)
    assert progress(at) == (4, 0)


def test_roc_waits_for_a_positive_and_a_negative_label(db_url):
    """Before both classes are labelled the live ROC says so, like the AUC chart,
    instead of drawing the diagonal of an untrained model as 'AUC 0.500'."""
    at = start_app()
    start_session(at, "ada", "random")
    for key in (None, "negative", "negative"):
        if key:
            click(at, key)
        roc = _chart_texts(at, 0)
        assert "needs a positive and a negative label" in roc and "AUC 0.500" not in roc
    click(at, "positive")
    roc = _chart_texts(at, 0)
    assert "needs a positive and a negative label" not in roc and "AUC " in roc


def test_compare_summary_has_readable_headers_and_no_raw_none(db_url):
    svc = service(db_url)
    dataset_id = svc.ensure_demo_dataset()
    svc.run_comparison(dataset_id, strategies=["near-boundary", "random"], budget=8, seeds=2, initial=4)
    at = start_app()
    at.switch_page("views/compare.py").run()
    assert not at.exception, at.exception
    (table,) = [df.value for df in at.dataframe if ALC in df.value.columns]
    assert list(table["heuristic"]) == [heuristic_words("near-boundary"), heuristic_words("random")]
    for column in (ALC, "95% found", WTL):
        assert column in table.columns
    (more,) = [df.value for df in at.dataframe if "final AUC" in df.value.columns]
    assert "to 95 %" in more.columns
    assert table.loc[table["heuristic"] == heuristic_words("random"), WTL].item() == "baseline"
    cells = table.astype(str).to_numpy().ravel()
    assert not any(c in ("None", "nan") for c in cells), cells
    assert any(c.startswith(f"{ALC}: how soon the model learned") for c in texts(at))


def test_live_charts_do_not_mislead():
    from app import charts

    history = pd.DataFrame(
        {
            "n_labels": [1, 2, 3, 4],
            "auc": [0.50, 0.47, 0.46, 0.49],
            "n_sv": [1, 2, 3, 4],
            "n_bound": [0, 1, 1, 2],
            "n_in_margin": [9, 8, 7, 6],
        }
    )
    auc = charts.auc_figure(history, has_evaluation=True)["layout"]
    low, high = auc["yaxis"]["range"]
    assert low <= 0.46 and high >= 1.0  # a wobble below chance is drawn next to chance and 1, not blown up
    sv = charts.support_vector_figure(history)["layout"]
    assert sv["legend"]["y"] > 0  # the legend sits in the plot, not on the x-axis title below it


def test_the_label_column_s_values_are_read_once_per_file_not_on_every_rerun(db_url, monkeypatch):
    from app.ui.forms import column_values

    svc = service(db_url)
    reads = []
    original = MarginLab.column_values
    monkeypatch.setattr(MarginLab, "column_values", lambda self, *a, **k: reads.append(a) or original(self, *a, **k))
    data = b"a;label\n1;yes\n2;no\n3;maybe\n"
    for _ in range(3):  # three reruns of the Data page with the same file and choices
        assert column_values(svc, data, "label", ";") == ["maybe", "no", "yes"]
    assert len(reads) == 1
    assert column_values(svc, data, "a", ";") == ["1", "2", "3"] and len(reads) == 2  # another column: read


def test_upload_helpers_name_the_file_and_refuse_empty_files(db_url):
    from app.ui.forms import unreadable_csv
    from app.ui.messages import data_error_text

    svc = service(db_url)
    assert unreadable_csv(svc.preview_csv(b""), "empty.csv") == (
        "empty.csv: the file is empty (a CSV needs a header row and at least one data row)."
    )
    assert "no data rows" in unreadable_csv(svc.preview_csv(b"a,b,label\n"), "head.csv")
    assert unreadable_csv(svc.preview_csv(b"a,b,label\n1,2,yes\n"), "ok.csv") is None
    with pytest.raises(ServiceError) as error:
        svc.import_csv(b"a,b,label\n1,2,yes\n3,oops,no\n", name="bad", label_column="label", positive="yes")
    text = data_error_text(error.value, "bad.csv")
    assert text.startswith("bad.csv: ") and "'oops'" in text and "row 2" in text


@pytest.mark.parametrize("text", ["abc", "0", "-2", "inf", "nan", "1e400"])
def test_parse_gamma_refuses_what_is_not_a_positive_number_with_one_message(text):
    from app.ui.forms import parse_gamma

    with pytest.raises(ServiceError) as error:
        parse_gamma(text)
    assert str(error.value) == f"gamma must be 'scale' or a positive number such as 0.01, not '{text}'."


def test_parse_gamma_reads_scale_and_positive_numbers():
    from app.ui.forms import parse_gamma

    assert parse_gamma("") == parse_gamma(" Scale ") == "scale"
    assert parse_gamma(" 0.5 ") == 0.5 and parse_gamma("1e-9") == 1e-9


def test_scale_features_standardises_columns_or_leaves_them():
    from app.services import scale_features

    X = np.array([[1, 10, 5], [3, 20, 5], [5, 60, 5]])
    scaled = scale_features(X, "standard")
    assert np.allclose(scaled.mean(axis=0), 0.0) and np.allclose(scaled.std(axis=0), [1.0, 1.0, 0.0])
    plain = scale_features(X, "none")
    assert plain.dtype == np.float64 and np.array_equal(plain, X)
    with pytest.raises(ServiceError):
        scale_features(X, "minmax")


def test_chart_titles_fit_their_charts_and_axes_are_named():
    """Long titles (the ROC of the scores when asked) are wrapped instead of running off a
    narrow live chart, the live plots share one top margin, and the Compare axes say what
    they measure."""
    from app import charts

    history = pd.DataFrame(
        {
            "n_labels": [1, 2, 3],
            "auc": [0.5, 0.6, 0.7],
            "n_sv": [1, 2, 3],
            "n_bound": [0, 1, 1],
            "n_in_margin": [9, 8, 7],
        }
    )
    roc = (
        np.array([0.0, 0.5, 1.0]),
        np.array([0.0, 1.0, 1.0]),
        0.75,
        "ROC · scores the model gave each item when it was asked<br>(8 labels)",
    )
    figures = [
        charts.roc_figure(roc, has_evaluation=False),
        charts.auc_figure(history, has_evaluation=False),
        charts.support_vector_figure(history),
        charts.margin_figure(history),
    ]
    for figure in figures:
        title = figure["layout"]["title"]["text"]
        assert all(len(line) <= charts.LIVE_TITLE_CHARS for line in title.split("<br>")), title
    assert len({f["layout"]["margin"]["t"] for f in figures}) == 1
    assert len({f["layout"]["height"] for f in figures}) == 1
    rows = pd.DataFrame(
        {
            "strategy": ["random"] * 2,
            "solver": ["lasvm"] * 2,
            "seed": [0, 0],
            "n_labels": [1, 2],
            "auc": [0.5, 0.6],
            "n_sv": [1, 2],
        }
    )
    assert charts.learning_curve_figure(rows, "auc")["layout"]["yaxis"]["title"]["text"] == "test AUC"
    assert charts.learning_curve_figure(rows, "n_sv")["layout"]["yaxis"]["title"]["text"] == "support vectors"


def test_the_live_roc_curve_of_many_held_out_items_is_drawn_with_a_few_hundred_points(db_url):
    """The Label page sends the browser at most ``charts.ROC_POINTS`` points of the ROC curve (one per
    held-out item before: 300,000 after every label on a 1M-row dataset), from (0, 0) to (1, 1), and
    the AUC of every held-out item."""
    import json

    from app import charts
    from benchmarks.bench_scale_app import make_csv

    svc = service(db_url)
    # an evaluation split asked for with the dataset (the share held out when it was uploaded)
    result = svc.import_csv(make_csv(4000, 3), name="gaussians", label_column="label", positive="1", eval_fraction=0.3)
    at = start_app("bo")
    start_session(at, "bo", "near-boundary", dataset_id=result.dataset_id)
    (session,) = [s for s in repo.list_sessions(svc.engine) if s.dataset_id == result.dataset_id]
    truth, given = svc.open_session(session.id).y_true, []
    while len(set(given)) < 2 or len(given) < 4:
        given.append(int(truth[shown_item(at)]))
        click(at, "positive" if given[-1] == 1 else "negative")
    fpr, tpr, auc, _ = service(db_url).open_session(session.id).roc()  # the page's model, rebuilt
    assert len(fpr) > 2 * charts.ROC_POINTS  # a point per held-out item (1,200 of them)
    spec = json.loads(_chart_texts(at, 0))
    (curve,) = [trace for trace in spec["data"] if str(trace.get("name", "")).startswith("AUC")]
    assert curve["name"] == f"AUC {auc:.3f}"
    assert 2 < len(curve["x"]) <= charts.ROC_POINTS and len(curve["y"]) == len(curve["x"])
    assert (curve["x"][0], curve["y"][0], curve["x"][-1], curve["y"][-1]) == (0, 0, 1, 1)
    assert np.all(np.diff(curve["x"]) >= 0) and np.all(np.diff(curve["y"]) >= 0)


def test_curve_points_leave_out_only_short_stretches():
    from app.charts import curve_points

    rng = np.random.default_rng(3)
    for n, limit in ((10, 20), (5000, 100), (30001, 500)):
        x, y = np.cumsum(rng.exponential(size=n)), np.cumsum(rng.exponential(size=n) * (rng.random(n) < 0.5))
        kept = curve_points(x, y, limit)
        assert kept[0] == 0 and kept[-1] == n - 1 and len(kept) <= limit and np.all(np.diff(kept) > 0)
        length = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(x)) + np.abs(np.diff(y)))])
        before = kept[np.searchsorted(kept, np.arange(n), side="right") - 1]  # the drawn point at or before
        assert np.all(length - length[before] < length[-1] / (limit - 2) + 1e-9)
    assert list(curve_points(np.zeros(4), np.zeros(4), 3)) == [0, 3]


def test_a_budget_spent_on_initial_labels_is_refused_before_running(db_url):
    at = start_app()
    at.switch_page("views/compare.py").run()
    run_comparison(at, budget=8, seeds=None, initial=10)
    errors = [e.value for e in at.error]
    assert errors and "10 initial labels use the whole budget of 8" in errors[0], errors
    assert service(db_url).comparisons() == []


def test_a_file_of_a_million_columns_is_refused_on_the_data_page_before_it_is_read(db_url, tmp_path, monkeypatch):
    from tests.core.test_datasets import refused_before_pandas, wide_csv

    data = wide_csv(tmp_path / "wide.csv").read_bytes()
    at = start_app()
    at.switch_page("views/data.py").run()
    refused_before_pandas(monkeypatch)
    at.file_uploader(key="upload").upload("wide.csv", data, "text/csv").run()
    assert not at.exception, at.exception
    assert shown(at.error) == [
        "wide.csv: 1,000,000 columns; MarginLab reads CSV files of at most 10,000 columns "
        "(leave out the columns it does not need)"
    ]
    # no preview (the datasets' tables only: what a screener reads, and under Advanced how the model reads them)
    assert [df for df in at.dataframe if not {"shown as", "kernel"} & set(df.value.columns)] == []


#: a name that shows backwards from the override on: "invoice_exe.pdf" on screen, "invoice_fdp.exe" in truth
REVERSED = "invoice_\u202efdp.exe"


def test_characters_that_reorder_text_are_shown_as_their_code(db_url):
    from app.ui.text import plain, visible

    assert visible(REVERSED) == "invoice_[U+202E]fdp.exe"
    assert "\u202e" not in plain(REVERSED) and as_shown(plain(REVERSED)) == "invoice_[U+202E]fdp.exe"
    for control in "\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069":
        assert visible(f"a{control}b") == f"a[U+{ord(control):04X}]b"
    assert visible("שלום \u200f world") == "שלום \u200f world"  # right-to-left text and its marks are kept
    svc = service(db_url)
    rows = "".join(f"{k * 0.1:.1f},{k % 2}\n" for k in range(20))
    dataset_id = svc.import_csv(f"x,y\n{rows}".encode(), name=REVERSED, label_column="y", positive="1").dataset_id
    svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random")
    at = start_app()
    at.switch_page("views/data.py").run()
    (table,) = [df.value for df in at.dataframe if "shown as" in df.value.columns]
    assert "invoice_[U+202E]fdp.exe" in list(table["name"])
    at.switch_page("views/label.py").run()
    (picker,) = [s for s in at.selectbox if s.label == "Session"]
    assert all("\u202e" not in option for option in picker.options)
    assert any("invoice_[U+202E]fdp.exe" in option for option in picker.options), picker.options
    assert "invoice_[U+202E]fdp.exe (20 items)" in at.selectbox(key="new_dataset").options


def test_item_keys_that_reorder_text_are_shown_as_their_code_in_history_and_the_export_preview(db_url):
    svc = service(db_url)
    rows = "".join(f"{REVERSED}{k},{k * 0.1:.1f},{k % 2}\n" for k in range(20))
    dataset_id = svc.import_csv(
        f"id,x,y\n{rows}".encode(), name="keys", label_column="y", positive="1", key_column="id"
    ).dataset_id
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random")
    for _ in range(2):
        assert run.answer(-1, item_index=run.shown.item_index).ok
    at = start_app()
    at.switch_page("views/history.py").run()
    assert not at.exception, at.exception
    (table,) = [df.value for df in at.dataframe if "key" in df.value.columns]
    assert all(key.startswith("invoice_[U+202E]fdp.exe") for key in table["key"]), list(table["key"])
    at.switch_page("views/export.py").run()
    assert not at.exception, at.exception
    (preview,) = [df.value for df in at.dataframe if "item_key" in df.value.columns]
    assert all(key.startswith("invoice_[U+202E]fdp.exe") for key in preview["item_key"]), list(preview["item_key"])


def test_the_datasets_table_lists_a_dataset_as_soon_as_it_is_imported(db_url):
    at = start_app()
    at.switch_page("views/data.py").run()
    at.selectbox(key="bundled_name").select("breast-cancer").run()
    at.button(key="bundled_add").click().run()
    assert not at.exception, at.exception
    (table,) = [df.value for df in at.dataframe if "shown as" in df.value.columns]
    assert sorted(table["name"]) == sorted([DEMO_NAME, "breast-cancer"])
    assert any("Imported 'breast-cancer'" in s for s in shown(at.success))
    at.run()  # the message is said once, not on every later visit
    assert not any("Imported" in s.value for s in at.success)


# --------------------------------------------------------------------------- documents and molecules


def test_highlighted_document_is_plain_text_with_marginlab_s_own_highlights():
    from app.ui.item import TERM_COLOURS, highlighted_markdown

    text = "PTSD [link](http://x.org) <b>bold</b> :red-background[fake]\nafter trauma"
    md = highlighted_markdown(text, [("trauma", 0.4), ("ptsd", 0.1), ("link", -0.2)])
    up, down = ('{{foreground="{}" background="{}"}}'.format(*TERM_COLOURS[way]) for way in ("up", "down"))
    assert md.startswith(f":color[PTSD]{up} \\[:color[link]{down}\\]")
    assert f":color[trauma]{up}" in md and "  \n" in md  # the line break stays one
    # the document's own brackets, tags and directives are escaped: only our three highlights are directives
    assert re.findall(r"(?<!\\):color\[\w+\]\{foreground=\"#\w+\" background=\"(#\w+)\"\}", md) == [
        TERM_COLOURS["up"][1],
        TERM_COLOURS["down"][1],
        TERM_COLOURS["up"][1],
    ]
    assert not re.findall(r"(?<!\\):(green|red)-background\[", md)
    assert "\\<b\\>" in md and "\\:\u2060red\\-background\\[fake\\]" in md
    assert as_shown(highlighted_markdown(text, None)) == text.replace("\n", "  \n")


def test_a_document_dataset_is_labelled_with_its_text_shown(db_url):
    docs = [
        "Robot arm grasping with tactile sensors",
        "Image segmentation with convolutional networks",
        "Legged robot locomotion on rough terrain",
        "Language models for translation",
    ] * 15
    csv = "key,text,topic\n" + "".join(
        f"d{i},{d} number {i},{'robotics' if 'obot' in d else 'other'}\n" for i, d in enumerate(docs)
    )
    svc = service(db_url)
    result = svc.import_csv(
        csv.encode(),
        name="abstracts",
        label_column="topic",
        positive="robotics",
        key_column="key",
        text_features=["text"],
        text_svd=8,
        eval_fraction=0.0,
    )
    info = svc.dataset(result.dataset_id)
    assert info.display_kind == "text" and info.meta["eval_fraction"] == 0.0
    assert info.meta["feature_blocks"][0]["kind"] == "svd" and info.n_features == 8
    at = start_app("di")
    at.switch_page("views/label.py").run()
    start_session(at, "di", "largest-positive", dataset_id=result.dataset_id)
    item = shown_item(at)
    assert any(t.value == f"{docs[item]} number {item}" for t in at.text)
    run = svc.open_session(svc.sessions(status="active")[0].id)
    assert len(run.eval_items) == 0 and len(run.pool_items) == 60  # evaluation share 0: every item in the pool


def test_a_molecule_too_large_to_draw_is_shown_as_its_smiles_with_a_note(db_url, monkeypatch):
    from rdkit.Chem.Draw import rdMolDraw2D

    from core import features

    features._drawing.cache_clear()
    monkeypatch.setattr(rdMolDraw2D, "MolDraw2DSVG", lambda *size: pytest.fail("a drawing was started"))
    chains = [("C" * (2500 + i)) + ("O" if i % 2 else "N") for i in range(20)]  # every item a long chain
    csv = "key,smiles,active\n" + "".join(f"m{i},{c},{i % 2}\n" for i, c in enumerate(chains))
    svc = service(db_url)
    result = svc.import_csv(
        csv.encode(),
        name="chains",
        label_column="active",
        positive="1",
        key_column="key",
        smiles_column="smiles",
        eval_fraction=0.0,
    )
    at = start_app("mo")
    at.switch_page("views/label.py").run()
    start_session(at, "mo", "random", dataset_id=result.dataset_id)
    item = shown_item(at)
    notes = [c for c in shown(at.caption) if c.startswith("Not drawn")]
    assert notes == [
        f"Not drawn: this molecule has {2501 + item:,} atoms, and molecules are drawn up to "
        f"{features.MAX_DRAWN_ATOMS} (a larger drawing would hold the server for seconds to minutes). "
        "Its SMILES:"
    ], notes
    assert chains[item] in shown(at.caption) and not at.get("imgs")
    click(at, "positive")  # the next item: still no drawing started
    assert shown_item(at) != item and any(c.startswith("Not drawn") for c in shown(at.caption))


def test_the_review_model_learns_documents_with_weights_that_follow_the_labels_and_resumes(db_url):
    docs = [
        "Robot arm grasping with tactile sensors",
        "Image segmentation with convolutional networks",
        "Legged robot locomotion on rough terrain",
        "Language models for translation",
        "Speech recognition in noisy rooms",
        "Graph neural networks for molecules",
    ] * 12
    csv = "key,text,topic\n" + "".join(
        f"d{i},{d} number {i},{'robotics' if 'obot' in d else 'other'}\n" for i, d in enumerate(docs)
    )
    svc = service(db_url)
    result = svc.import_csv(
        csv.encode(),
        name="abstracts",
        label_column="topic",
        positive="robotics",
        key_column="key",
        text_features=["text"],
        eval_fraction=0.0,
    )
    at = start_app("di")
    at.switch_page("views/label.py").run()
    assert at.radio(key="new_model").value == "auto"
    at.radio(key="new_model").set_value("review")
    start_session(at, "di", "largest-positive", dataset_id=result.dataset_id)
    for _ in range(6):
        item = shown_item(at)
        click(at, "positive" if "obot" in docs[item] else "negative")
    (info,) = [s for s in svc.sessions(status="active") if s.dataset_id == result.dataset_id]
    assert info.solver == "ramp"
    run = svc.open_session(info.id)
    solver = run.loop.solver
    assert solver.class_weight == "balanced" and solver.balance_ratio == 9.8 and solver.loss == "squared_hinge"
    labels = np.array([label for _, label in run.loop.events], dtype=float)
    n_pos, n_neg = int((labels > 0).sum()), int((labels < 0).sum())
    assert n_pos and n_neg, "the first six answers hold both classes here"
    # after the last label the positives together weigh 9.8 times the negatives (C = 0.11 each unit)
    w_pos, w_neg = solver.class_weights_
    assert np.isclose(w_pos * n_pos, 9.8 * w_neg * n_neg) and np.isclose(w_pos * n_pos + w_neg * n_neg, 6)
    scores = run.loop.pool_scores().copy()
    svc.close_session(info.id)
    svc.engine.dispose()
    again = service(db_url).open_session(info.id)
    np.testing.assert_array_equal(again.loop.pool_scores(), scores)
    with pytest.raises(ServiceError, match="runs on the ramp solver"):
        svc.start_session(
            dataset_id=result.dataset_id, annotator="di", strategy="largest-positive", solver="lasvm", model="review"
        )
    with pytest.raises(ServiceError, match="Unknown model 'fast'"):
        svc.start_session(dataset_id=result.dataset_id, annotator="di", strategy="largest-positive", model="fast")
    # the form's default, "suited to the data": the review model for documents searched for positives only
    auto = svc.start_session(dataset_id=result.dataset_id, annotator="di", strategy="largest-positive", model="auto")
    assert auto.info.solver == "ramp" and auto.solver_params["class_weight"] == "balanced"
    other = svc.start_session(dataset_id=result.dataset_id, annotator="di", strategy="near-boundary", model="auto")
    assert other.info.solver == DEFAULT_SOLVER["near-boundary"] and "class_weight" not in other.solver_params
    numbers = svc.import_bundled("digits", positive=8).dataset_id  # numbers, not documents
    digits = svc.start_session(dataset_id=numbers, annotator="di", strategy="largest-positive", model="auto")
    assert digits.info.solver == DEFAULT_SOLVER["largest-positive"] and digits.solver_params["kernel"] == "rbf"


def test_a_warm_start_hands_its_service_to_the_first_page_view_once(tmp_path):
    import threading

    from app.services import startup

    url = f"sqlite:///{tmp_path / 'warm.db'}"
    before = service(url)
    older = _labelled_run(before, "near-boundary", 3).session_id
    latest = _labelled_run(before, "random", 4, seed=1).session_id
    closed = _labelled_run(before, "random", 2, seed=2).session_id
    before.close_session(closed)
    before.engine.dispose()
    startup.warm_start(url)
    warm = startup.take_prepared(url)  # (waits for the warm start)
    assert isinstance(warm, MarginLab) and [d.name for d in warm.datasets()] == [DEMO_NAME]
    assert startup.take_prepared(url) is None  # once: a cleared cache opens the database anew
    for thread in threading.enumerate():  # the warm start reopens the last session labelled, then ends
        if thread.name == "marginlab-warm-start":
            thread.join()
    assert warm.is_open(latest) and not warm.is_open(older) and not warm.is_open(closed)
    run = warm.open_session(latest)
    assert len(run.answers) == 4 and run.problem is None
    warm.engine.dispose()
    not_a_database = tmp_path / "notes.txt"
    not_a_database.write_text("not a database\n" * 100)
    bad = f"sqlite:///{not_a_database}"
    startup.warm_start(bad)
    assert startup.take_prepared(bad) is None  # the page view opens it and says what is wrong
    assert not_a_database.read_text() == "not a database\n" * 100  # left as it was
    assert startup.take_prepared(f"sqlite:///{tmp_path / 'never.db'}") is None


def test_a_warm_started_item_view_reads_nothing_more_from_the_database(tmp_path, monkeypatch):
    """``item_display.warm`` (what the warm start does for the session it brings back): the table item's
    stored row and the features' spread are ready, so the first page's feature table reads no row."""
    from app.ui.item import feature_table
    from storage import repository as repo

    svc = service(f"sqlite:///{tmp_path / 'warm-view.db'}")
    data = (Path(__file__).resolve().parents[2] / "assets" / "breast_cancer.csv").read_bytes()
    dataset_id = svc.import_csv(
        data, name="breast cancer", label_column="diagnosis", positive="malignant", key_column="id"
    ).dataset_id
    run = svc.start_session(dataset_id=dataset_id, annotator="cy", strategy="near-boundary", seed=0)
    for _ in range(6):
        item = run.shown.item_index
        assert run.answer(int(run.y_true[item]), item_index=item).ok
    item = run.shown.item_index
    expected, _ = feature_table(run.item_display, item)  # (reads the row)
    fresh = service(svc.engine.url.render_as_string(hide_password=False)).open_session(run.session_id)
    reads = []
    real = repo.load_feature_rows
    monkeypatch.setattr(repo, "load_feature_rows", lambda *a, **k: reads.append(a) or real(*a, **k))
    fresh.item_display.warm(fresh.shown.item_index)
    assert len(reads) == 1 and fresh.shown.item_index == item
    table, ranked = feature_table(fresh.item_display, item)
    assert len(reads) == 1 and ranked  # nothing read again
    pd.testing.assert_frame_equal(table, expected)


def test_words_that_barely_moved_the_score_are_not_highlighted():
    from app.ui.item import NOTABLE_SHARE, notable_terms

    # a term is notable when it moved the score by NOTABLE_SHARE (5%) of all the terms' moves together
    terms = [("robot", 0.4), ("grasping", -0.1), ("the", -0.0004), ("of", 0.003), ("arm", 0.008)]
    assert NOTABLE_SHARE == 0.05
    assert notable_terms(terms) == [("robot", 0.4), ("grasping", -0.1)]  # "arm": 1.6% of the total
    assert notable_terms([]) == [] and notable_terms(None) is None
    # many common words each moving the score a little: none stands out (the largest is 4.8%)
    noise = [("43", 0.002)] + [(f"word{i}", -0.001) for i in range(40)]
    assert notable_terms(noise) == []
    # at most six each way, the largest first
    many = [(f"up{i}", 1.0 - i / 100) for i in range(8)] + [(f"down{i}", -1.0 + i / 100) for i in range(8)]
    assert notable_terms(many) == many[:6] + many[8:14]


def test_the_why_line_quotes_each_term_to_two_significant_digits_or_says_none_stands_out():
    from app.ui.item import why_terms

    line = as_shown(why_terms([("robot", 0.4), ("and call", -0.01234), ("for", -0.0046)]))
    assert line == "Terms that pushed the score up: “robot” (+0.40) · down: “and call” (-0.012), “for” (-0.0046)"
    assert (
        as_shown(why_terms([("and call", -0.5)])) == "Terms that pushed the score up: none · down: “and call” (-0.50)"
    )
    assert as_shown(why_terms([])) == (
        "No single term stands out: the score comes from many terms, each moving it by less than 5% of their total."
    )


def test_a_comparison_says_which_runs_never_left_the_cold_start():
    import pandas as pd

    from app.ui.tables import runs_without_the_heuristic

    rows = pd.DataFrame(
        [
            {"strategy": "largest-positive", "seed": 0, "cold_start": True},
            {"strategy": "largest-positive", "seed": 0, "cold_start": True},
            {"strategy": "largest-positive", "seed": 1, "cold_start": True},
            {"strategy": "largest-positive", "seed": 1, "cold_start": False},
            {"strategy": "random", "seed": 0, "cold_start": True},
        ]
    )
    notice = runs_without_the_heuristic(rows)
    assert notice.startswith(
        "In 1 of 2 runs every label was drawn at random by the cold start: "
        f"{heuristic_words('largest-positive')} (seed 0)."
    )
    assert runs_without_the_heuristic(rows[rows.seed == 1]) is None
    assert runs_without_the_heuristic(rows.drop(columns="cold_start")) is None


def test_the_compare_page_shows_the_cold_start_notice_when_no_positive_was_drawn(db_url):
    svc = service(db_url)
    rng = np.random.default_rng(8)
    X = rng.normal(size=(400, 2))
    y = np.where(np.arange(400) < 3, "yes", "no")  # 3 positives in 400: a short budget finds none
    csv = "a,b,hit\n" + "\n".join(f"{u},{v},{c}" for (u, v), c in zip(X, y, strict=True))
    result = svc.import_csv(csv.encode(), name="rare", label_column="hit", positive="yes")
    at = start_app()
    at.switch_page("views/compare.py").run()
    at.selectbox(key="compare_dataset").select(result.dataset_id)
    run_comparison(at, ["largest-positive"], budget=12, seeds=1, initial=None)
    warnings = [w.value for w in at.warning]
    said = f"every label was drawn at random by the cold start: {heuristic_words('largest-positive')} (seed 0)"
    assert any(said in as_shown(w) for w in warnings), warnings


def test_the_comparison_summary_shows_the_recall_columns_early():
    import pandas as pd

    from app.ui.tables import summary_table

    summary = pd.DataFrame(
        [
            {
                "strategy": "largest-positive",
                "solver": "ramp",
                "n_seeds": 2,
                "alc_mean": 0.5,
                "alc_std": 0.1,
                "labels_recall_50": 105.0,
                "reached_recall_50": 2,
                "labels_recall_80": 305.5,
                "reached_recall_80": 2,
                "labels_recall_95": None,
                "reached_recall_95": 0,
                "wss_95": None,
            }
        ]
    )
    table = summary_table(summary)
    assert list(table.columns[:7]) == [
        "heuristic",
        "model",
        ALC,
        "50% found",
        "80% found",
        "95% found",
        WSS_95,
    ]  # (no random run: no wins or losses against it)
    with_random = summary_table(pd.concat([summary, summary.assign(strategy="random")]))
    assert list(with_random.columns[:4]) == ["heuristic", "model", ALC, WTL]
    assert table.iloc[0]["50% found"] == "105 (2/2)" and table.iloc[0]["95% found"] == "never"
