"""A session with named classes in a real browser (Debian's Chromium, headless): the keys 1 to K answer with
their class, U undoes, S skips; the class names show as written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.browser.test_browser import (
    OWNER,
    AppServer,
    item_caption,
    launch_browser,
    open_app,
    press_label_key,
    shown_item_index,
    wait_for_app,
)

pytestmark = pytest.mark.browser

CLASSES = ("cat", "**x**", "fox")


def prepare_session(db_url: str) -> tuple[int, np.ndarray]:
    """A K-class session on three separated groups (no answer yet); its id and each item's group."""
    from app.services import MarginLab
    from storage import repository as repo

    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()  # (the first owner's demo is then not what opens)
    rng = np.random.default_rng(4)
    group = np.repeat([0, 1, 2], 15)
    X = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])[group] + rng.normal(0, 0.6, (45, 2))
    dataset_id = repo.import_dataset(svc.engine, name="blobs", X=X, feature_names=["a", "b"])
    run = svc.start_session(dataset_id=dataset_id, annotator=OWNER, strategy="smallest-margin", classes=CLASSES)
    svc.engine.dispose()
    return run.session_id, group


def test_the_number_keys_answer_with_their_class_and_u_undoes(tmp_path):
    from playwright.sync_api import sync_playwright

    from storage import repository as repo
    from storage.engine import make_engine

    db_url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    session_id, group = prepare_session(db_url)
    asked = []
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(db_url, Path(tmp_path) / "server.log") as server:
                page = open_app(browser, f"{server.url}/?session={session_id}")
                page.wait_for_selector(".st-key-item_caption", timeout=60_000)
                wait_for_app(page)
                buttons = page.locator(".st-key-class_buttons").inner_text(timeout=30_000).replace("\u2060", "")
                # each class by its name, its key only as the hint beside it (not "name (1)" besides)
                assert all(name in buttons for name in CLASSES) and "(1)" not in buttons, buttons
                # one row at 1400 pixels: Undo does not wrap onto a second row
                tops = page.locator(".st-key-class_buttons button").evaluate_all(
                    "els => els.map(e => Math.round(e.getBoundingClientRect().top))"
                )
                assert len(tops) == len(CLASSES) + 2 and len(set(tops)) == 1, tops
                page.mouse.click(5, 5)  # focus out of any input so the keys reach the buttons
                for _ in range(6):
                    item = shown_item_index(page)
                    asked.append(item)
                    press_label_key(page, str(int(group[item]) + 1), item_caption(page))
                press_label_key(page, "u", item_caption(page))
                wait_for_app(page)
                assert shown_item_index(page) == asked[-1]
        finally:
            browser.close()
    engine = make_engine(db_url)
    try:
        events = repo.label_events(engine, session_id)
    finally:
        engine.dispose()
    assert [(e.item_index, e.answer_class) for e in events] == [(i, int(group[i])) for i in asked[:-1]]
