"""The first minute in the app: the demo open after the first sign-in, a New session form in a screener's
words, charts that mean something for the chosen model, no item held out unless asked, visible highlights.

Through ``streamlit.testing.v1.AppTest`` on the real entry point, each test on its own SQLite database.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app.services import DEMO_NAME, MarginLab, ServiceError
from core.solvers.auto_hyper import DEFAULT_LAG
from storage import repository as repo
from tests.app import test_app
from tests.app.test_app import (
    PASSWORD,
    anonymous_app,
    click,
    ensure_account,
    shown,
    shown_item,
    sign_in,
    start_app,
    start_session,
    texts,
)
from tests.app.test_app_history import import_file

pytestmark = pytest.mark.app  # pages through Streamlit's AppTest (a slow lane)

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- (a) the demo after the first sign-in


OWNER = "owner"  # the first owner: the server creates it with the password from MARGINLAB_OWNER_PASSWORD


def owner_signs_in() -> AppTest:
    """A new browser session of the first owner, signed in through the sign-in page."""
    at = anonymous_app()
    return sign_in(at, OWNER, PASSWORD)


def answer_buttons(at: AppTest, item: int) -> dict:
    return {
        b.key.split("_")[0]: b for b in at.button if b.key in (f"positive_{item}", f"negative_{item}", f"skip_{item}")
    }


def forget_the_process() -> None:
    """As after a restart of the server: the next page view opens the database anew."""
    from app.ui.state import _service_for

    _service_for.clear()


def test_the_first_owner_finds_the_demo_open_on_its_first_item_after_the_first_sign_in(db_url):
    at = owner_signs_in()
    assert [t.value for t in at.title] == ["Label"]
    item = shown_item(at)
    buttons = answer_buttons(at, item)
    assert set(buttons) == {"positive", "negative", "skip"} and not any(b.disabled for b in buttons.values())
    svc = MarginLab.from_url(db_url)
    (demo,) = svc.sessions()
    assert demo.annotator == OWNER and demo.dataset_name == DEMO_NAME and demo.status == "active"
    assert demo.n_labels == 0 and svc.open_session(demo.id).shown.item_index == item
    assert demo.strategy == at.selectbox(key="new_strategy").value  # the New session form's defaults
    # (C and gamma chosen from the labels, as the form's box is ticked by default)
    assert at.checkbox(key="new_auto_hyper").value
    assert "chosen from the labels from 20 labels on" in svc.open_session(demo.id).hyper_words
    # what a person sees: the item can be labelled at once
    click(at, "positive")
    assert [(e.item_index, e.value) for e in repo.label_events(svc.engine, demo.id)] == [(item, 1)]

    # once: not again in a second tab, after a restart, or once it is closed
    owner_signs_in()
    forget_the_process()
    owner_signs_in()
    assert [s.id for s in svc.sessions()] == [demo.id]
    svc.close_session(demo.id)
    forget_the_process()
    again = owner_signs_in()
    assert [s.id for s in svc.sessions()] == [demo.id]
    assert any("Start a session with **New session**" in i.value for i in again.info)


def test_the_demo_is_the_first_owner_s_alone_and_only_on_a_database_without_sessions(db_url):
    anonymous_app()  # the server's first start: the demo dataset and the first owner
    ensure_account(db_url, "ada")  # another owner, and an annotator
    ensure_account(db_url, "ann", role="annotator")
    ada = sign_in(anonymous_app(), "ada")
    assert any("Start a session with **New session**" in i.value for i in ada.info)
    sign_in(anonymous_app(), "ann")
    svc = MarginLab.from_url(db_url)
    assert svc.sessions() == [] and svc.open_demo_session("ada") is None and svc.open_demo_session("ann") is None
    # a database that holds a session already (here ada's) gets no demo, not even for the first owner
    start_session(ada, "ada", "random")
    owner = owner_signs_in()
    assert [s.annotator for s in svc.sessions()] == ["ada"]
    assert any("Start a session with **New session**" in i.value for i in owner.info)


# --------------------------------------------------------------------------- (b) the New session form


def form_keys(block) -> set[str]:
    return {
        w.key for kind in ("selectbox", "text_input", "number_input", "radio", "checkbox") for w in getattr(block, kind)
    }


def test_the_new_session_form_asks_what_a_screener_decides_and_keeps_the_model_under_advanced(db_url):
    at = start_app()
    (advanced,) = [e for e in at.expander if e.label == "Advanced"]
    inside = form_keys(advanced)
    assert {
        "new_solver",
        "new_kernel",
        "new_C",
        "new_gamma",
        "new_loss",
        "new_tol",
        "new_seed",
        "new_eval_fraction",
        "new_auto_hyper",
    } <= inside
    assert not {"new_dataset", "new_find", "new_strategy", "new_model"} & inside
    assert at.text_input(key="new_find").label == "What to find"
    picker = at.selectbox(key="new_strategy")
    assert picker.label == "How to pick the next item"
    assert {"Most likely relevant first", "Most uncertain first", "Random"} <= set(picker.options)
    assert not {"largest-positive", "near-boundary"} & set(picker.options)
    model = at.radio(key="new_model")
    assert model.value == "auto" and model.options[0] == "Suited to the data"

    # the form left as it is starts the session the defaults always started, setting for setting, with C and
    # gamma chosen from the labels (the form's default)
    assert at.checkbox(key="new_auto_hyper").value is True
    start_session(at, "ada", "largest-positive")
    svc = MarginLab.from_url(db_url)
    (from_form,) = svc.sessions()
    dataset_id = from_form.dataset_id
    by_defaults = svc.start_session(
        dataset_id=dataset_id, annotator="ada", strategy="largest-positive", auto_hyper=True
    ).info
    assert (from_form.solver, from_form.params, from_form.seed) == (
        by_defaults.solver,
        by_defaults.params,
        by_defaults.seed,
    )
    assert from_form.params["solver_params"] == {
        "kernel": "rbf",
        "C": 1.0,
        "gamma": "scale",
        "auto": ["C", "gamma"],
        "auto_lag": DEFAULT_LAG,  # (chosen in the background, in use 10 labels later)
    }
    plain = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="largest-positive").info
    assert plain.params["solver_params"] == {"kernel": "rbf", "C": 1.0, "gamma": "scale"}  # (the service's default)


def test_what_to_find_is_shown_beside_the_buttons_and_advanced_settings_reach_the_solver(db_url):
    at = start_app()
    at.text_input(key="new_find").input("loops   that close")
    at.selectbox(key="new_solver").select("ramp")
    at.selectbox(key="new_kernel").select("linear")
    at.selectbox(key="new_loss").select("hinge")
    at.number_input(key="new_tol").set_value(1e-4)
    start_session(at, "ada", "near-boundary")
    (info,) = MarginLab.from_url(db_url).sessions()
    assert info.solver == "ramp" and info.params["find"] == "loops that close"
    assert {k: info.params["solver_params"][k] for k in ("kernel", "loss", "tol")} == {
        "kernel": "linear",
        "loss": "hinge",
        "tol": 1e-4,
    }
    assert "**Positive** means: loops that close" in texts(at)
    run = MarginLab.from_url(db_url).open_session(info.id)
    assert (run.loop.solver.kernel.name, run.loop.solver.loss, run.loop.solver.tol) == ("linear", "hinge", 1e-4)

    # without words of one's own, the dataset's positive class says what Positive means
    fresh = start_app("bo")
    start_session(fresh, "bo", "random")
    assert "**Positive** means: 8" in texts(fresh)
    # a loss for a solver that has none is refused in the form, naming it; nothing is stored
    fresh.selectbox(key="new_loss").select("squared_hinge")
    fresh.button(key="start_session").click().run()
    assert any("The loss is the ramp solver's choice" in e for e in shown(fresh.error)), shown(fresh.error)
    assert len(MarginLab.from_url(db_url).sessions()) == 2


def test_advanced_settings_are_checked_before_anything_is_stored(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    for settings, message in (
        ({"kernel": "sigmoid"}, "Unknown kernel 'sigmoid'"),
        ({"loss": "log", "solver": "ramp"}, "Unknown loss 'log'"),
        ({"tol": 0.0}, "The tolerance must be a positive"),
        ({"tol": 1.5}, "The tolerance must be below 1"),
        ({"kernel": "linear", "model": "review"}, "The review model sets its own kernel"),
    ):
        with pytest.raises(ServiceError, match=message):
            svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="largest-positive", **settings)
    assert svc.sessions() == []


# --------------------------------------------------------------------------- (c) charts that mean something


def documents_csv(n: int = 60) -> bytes:
    docs = [
        "Robot arm grasping with tactile sensors",
        "Image segmentation with convolutional networks",
        "Legged robot locomotion on rough terrain",
        "Language models for translation",
        "Speech recognition in noisy rooms",
        "Graph neural networks for molecules",
    ]
    rows = "".join(
        f"d{i},{docs[i % 6]} number {i},{'robotics' if 'obot' in docs[i % 6] else 'other'}\n" for i in range(n)
    )
    return ("key,text,topic\n" + rows).encode()


def chart_keys(at: AppTest) -> list[str]:
    return [chart.key for chart in at.get("plotly_chart")]


def test_with_the_review_model_the_label_page_shows_positives_found_and_the_stopping_state(db_url):
    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()
    docs = svc.import_csv(
        documents_csv(),
        name="abstracts",
        label_column="topic",
        positive="robotics",
        key_column="key",
        text_features=["text"],
    ).dataset_id
    at = start_app()
    at.radio(key="new_model").set_value("review")
    start_session(at, "ada", "largest-positive", dataset_id=docs)
    truth = repo.load_dataset_arrays(svc.engine, docs)[1]
    for _ in range(8):
        click(at, "positive" if truth[shown_item(at)] > 0 else "negative")
    (info,) = svc.sessions()
    run = svc.open_session(info.id)
    # why: with this model every label is a support vector and every unlabelled item lies inside the margin
    history = run.history()
    assert list(history["n_sv"]) == list(history["n_labels"])
    assert history["n_in_margin"].iloc[-1] == len(run.pool_items) - run.n_labels
    keys = chart_keys(at)
    assert "sv" not in keys and "margin" not in keys, keys
    assert {"roc", "auc", "gain"} <= set(keys), keys
    # the stopping state is said once, in the panel below with its heading and rules
    assert len(at.get("plotly_chart")) == 3
    said = [text for text in shown([*at.info, *at.success]) if "(rule: " in text]
    assert len(said) == 1, said
    assert any("When can I stop?" in t for t in texts(at))

    # an SVM of its own keeps its support-vector and margin charts (and the gain curve in the panel)
    digits = start_app("bo")
    start_session(digits, "bo", "near-boundary")
    assert sorted(chart_keys(digits)) == ["auc", "gain", "margin", "roc", "sv"]


# --------------------------------------------------------------------------- (d) nothing held out unless asked


def test_a_labelling_session_holds_no_item_out_unless_an_evaluation_split_is_asked_for(db_url):
    at = start_app()
    start_session(at, "ada", "random")
    svc = MarginLab.from_url(db_url)
    (info,) = svc.sessions()
    run = svc.open_session(info.id)
    n_items = run.dataset.n_items
    assert info.params["eval_fraction"] == 0.0 and not run.has_evaluation
    assert len(run.pool_items) == n_items and len(run.eval_items) == 0
    assert not any("held out" in t for t in texts(at))
    # every item can be labelled: a file of answers for items drawn over the whole dataset is imported whole
    rng = np.random.default_rng(7)
    items = [int(i) for i in rng.choice(n_items, size=60, replace=False) if i != run.shown.item_index]
    keys, names = run.display.item_keys, run.class_names
    rows = [(keys[i], names[int(run.y_true[i])]) for i in items]
    outcome = run.import_labels(import_file(rows), key_column="item_key", label_column="label")
    assert outcome.ok, outcome.message
    assert sorted(e.item_index for e in repo.label_events(svc.engine, info.id)) == sorted(items)
    # the live curve is drawn from the scores the model gave when it asked
    assert "scores when asked" in at.get("plotly_chart")[0].proto.spec

    # asked for, under Advanced: that share is held out, and the page says so
    at.number_input(key="new_eval_fraction").set_value(0.3)
    at.button(key="start_session").click().run()
    assert not at.exception and not at.error
    split = max(svc.sessions(), key=lambda s: s.id)
    held = svc.open_session(split.id)
    assert split.params["eval_fraction"] == 0.3 and held.has_evaluation
    assert len(held.eval_items) == round(0.3 * np.sum(held.y_true > 0)) + round(0.3 * np.sum(held.y_true < 0))
    assert any(f"{len(held.eval_items):,} held out for evaluation" in t for t in texts(at))


def test_a_session_stored_with_a_held_out_split_resumes_with_it(db_url):
    from app.services import evaluation_split

    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    asked = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="near-boundary", eval_fraction=0.3)
    # one stored without the share (before it was written down) holds out what it always did: 30 %
    unwritten = repo.start_session(
        svc.engine,
        dataset_id=dataset_id,
        annotator="ada",
        strategy="near-boundary",
        solver="incremental",
        params={"solver_params": {"kernel": "rbf", "C": 1.0, "gamma": "scale"}, "scaling": "none"},
        seed=0,
    )
    older = svc.open_session(unwritten)
    for run in (asked, older):
        for _ in range(6):
            item = run.shown.item_index
            assert run.answer(int(run.y_true[item]), item_index=item).ok
    expected = evaluation_split(asked.y_true, 0.3, 0)[1]
    scores = {run.session_id: run.loop.pool_scores().copy() for run in (asked, older)}
    restarted = MarginLab.from_url(db_url)
    for session_id in (asked.session_id, unwritten):
        again = restarted.open_session(session_id)
        np.testing.assert_array_equal(again.eval_items, expected)
        np.testing.assert_array_equal(again.loop.pool_scores(), scores[session_id])


# --------------------------------------------------------------------------- (e) highlights that can be seen


def relative_luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance of a #rrggbb colour."""
    channels = [int(colour.lstrip("#")[k : k + 2], 16) / 255 for k in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio of two colours, from 1 (the same) to 21 (black on white)."""
    light, dark = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


#: what Streamlit 1.67's light theme paints behind :green-background[...] and :red-background[...]
#: (its greenBackgroundColor and redBackgroundColor), for highlights written with those directives
STREAMLIT_BACKGROUNDS = {"green": "#F1FBF6", "red": "#FFF1F2"}


def highlights(markdown: str, text_colour: str) -> dict[str, tuple[str, str]]:
    """{highlighted word: (its text colour, its background colour)} in the Markdown of a document."""
    found = {}
    for word, foreground, background in re.findall(
        r'(?<!\\):color\[([^\]]+)\]\{foreground="(#[0-9a-fA-F]{6})" background="(#[0-9a-fA-F]{6})"\}', markdown
    ):
        found[word] = (foreground, background)
    for name, word in re.findall(r"(?<!\\):(\w+)-background\[([^\]]+)\]", markdown):
        found[word] = (text_colour, STREAMLIT_BACKGROUNDS[name])
    return found


def test_highlighted_terms_stand_out_from_the_page_at_3_to_1_and_stay_readable():
    from app.ui.item import highlighted_markdown

    theme = tomllib.loads((ROOT / "app" / ".streamlit" / "config.toml").read_text())["theme"]
    page, text_colour = theme["backgroundColor"], theme["textColor"]
    markdown = highlighted_markdown(
        "Trauma care after PTSD, not fractures", [("trauma", 0.4), ("ptsd", 0.1), ("fractures", -0.2)]
    )
    found = highlights(markdown, text_colour)
    assert set(found) == {"Trauma", "PTSD", "fractures"}, markdown
    assert len({background for _, background in found.values()}) == 2  # up and down look different
    for word, (foreground, background) in found.items():
        assert contrast(background, page) >= 3.0, (word, background, round(contrast(background, page), 2))
        assert contrast(foreground, background) >= 4.5, (word, foreground, background)


def test_the_contrast_ratio_is_wcag_s():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the well-known grey just below AA
    assert contrast("#2b6cb0", "#2b6cb0") == 1.0


def test_a_session_with_C_and_gamma_from_the_labels_says_which_and_when_and_reopens_the_same(db_url):
    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    run = svc.start_session(dataset_id=dataset_id, annotator="cy", strategy="near-boundary", auto_hyper=True)
    assert run.hyper_words.startswith("C 1, gamma ") and "chosen from the labels from 20 labels on" in run.hyper_words
    for _ in range(25):
        item = run.shown.item_index
        run.answer(int(run.y_true[item]), item_index=item)
    # started at label 20 (in the background), in use from label 30; a reopened session has it pending too
    assert run.loop.solver.hyper_pending["due"] == 30
    assert run.hyper_words.endswith("Next choice being made from the labels up to 20, used from label 30.")
    reopened = MarginLab.from_url(db_url).open_session(run.session_id)
    assert reopened.loop.solver.hyper_pending == run.loop.solver.hyper_pending
    for _ in range(6):
        item = run.shown.item_index
        run.answer(int(run.y_true[item]), item_index=item)
    assert [c["n_labels"] for c in run.loop.solver.hyper_choices] == [0, 30]
    assert "chosen from the first 20 labels by leave-one-out" in run.hyper_words
    assert "Next choice at 40 labels" in run.hyper_words
    scores = run.loop.solver.decision_function()
    reopened = MarginLab.from_url(db_url).open_session(run.session_id)  # rebuilt from the stored labels
    assert reopened.hyper_words == run.hyper_words
    assert np.array_equal(reopened.loop.solver.decision_function(), scores)
    plain = svc.start_session(dataset_id=dataset_id, annotator="cy", strategy="near-boundary")
    assert plain.hyper_words is None
