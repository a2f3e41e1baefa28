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

from app.service import MarginLab
from storage import repository as repo
from tests import test_app
from tests.test_app import (
    start_app,
    start_session,
    texts,
)
from tests.test_app_history import import_file

db_url = test_app.db_url  # a temporary SQLite file in MARGINLAB_DATABASE_URL

ROOT = Path(__file__).resolve().parent.parent


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
    unwritten = repo.start_session(svc.engine, dataset_id=dataset_id, annotator="ada", strategy="near-boundary",
                                   solver="incremental", params={"solver_params": {"kernel": "rbf", "C": 1.0,
                                                                                   "gamma": "scale"},
                                                                 "scaling": "none"}, seed=0)
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
    channels = [int(colour.lstrip("#")[k:k + 2], 16) / 255 for k in (0, 2, 4)]
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
            r'(?<!\\):color\[([^\]]+)\]\{foreground="(#[0-9a-fA-F]{6})" background="(#[0-9a-fA-F]{6})"\}', markdown):
        found[word] = (foreground, background)
    for name, word in re.findall(r"(?<!\\):(\w+)-background\[([^\]]+)\]", markdown):
        found[word] = (text_colour, STREAMLIT_BACKGROUNDS[name])
    return found


def test_highlighted_terms_stand_out_from_the_page_at_3_to_1_and_stay_readable():
    from app import ui

    theme = tomllib.loads((ROOT / "app" / ".streamlit" / "config.toml").read_text())["theme"]
    page, text_colour = theme["backgroundColor"], theme["textColor"]
    markdown = ui.highlighted_markdown("Trauma care after PTSD, not fractures",
                                       [("trauma", 0.4), ("ptsd", 0.1), ("fractures", -0.2)])
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
