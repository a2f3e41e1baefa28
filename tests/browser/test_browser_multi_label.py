"""A multi-label session in a real browser (Debian's Chromium, headless): the keys 1 to K pick and drop their
class, Enter submits the classes picked (none picked: none of these), U undoes; the class names show as
written."""

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

CLASSES = ("urgent", "**x**", "spam")
#: each group's classes (places): none, the first, the first and the third
GROUP_SETS = ((), (0,), (0, 2))


def prepare_session(db_url: str) -> tuple[int, np.ndarray]:
    """A multi-label session on three separated groups (no answer yet); its id and each item's group."""
    from app.services import MarginLab
    from storage import repository as repo

    svc = MarginLab.from_url(db_url)
    svc.ensure_demo_dataset()  # (the first owner's demo is then not what opens)
    rng = np.random.default_rng(4)
    group = np.repeat([0, 1, 2], 15)
    X = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])[group] + rng.normal(0, 0.6, (45, 2))
    dataset_id = repo.import_dataset(svc.engine, name="tickets", X=X, feature_names=["a", "b"])
    run = svc.start_session(
        dataset_id=dataset_id, annotator=OWNER, strategy="least-sure-class", classes=CLASSES, multi_label=True
    )
    svc.engine.dispose()
    return run.session_id, group


def buttons_text(page) -> str:
    return page.locator(".st-key-class_buttons").inner_text(timeout=30_000).replace("\u2060", "")


def pick_with_key(page, k: int, buttons: str = "class_buttons") -> None:
    """Press the key of class ``k`` (``k + 1``); wait for its tick among the ``buttons``."""
    page.locator("body").press(str(k + 1))
    page.wait_for_function(
        "([box, name]) => document.querySelector('.st-key-' + box).innerText"
        ".replaceAll('\\u2060', '').includes('✓ ' + name)",
        arg=[buttons, CLASSES[k]],
        timeout=30_000,
    )
    wait_for_app(page)


def submit_with_enter(page, item: int, key: str = "submit") -> None:
    """Press Enter once the item's Submit button (``key``) is on screen and enabled; wait for another item."""
    before = item_caption(page)
    page.wait_for_selector(f".st-key-{key}_{item} button:enabled", timeout=30_000)
    page.locator("body").press("Enter")
    page.wait_for_function(
        "(old) => { const el = document.querySelector('.st-key-item_caption');"
        " return el && el.innerText.trim() !== old; }",
        arg=before,
        timeout=30_000,
    )


def test_the_number_keys_pick_classes_enter_submits_and_u_undoes(tmp_path):
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
                shown = buttons_text(page)
                # each class by its name, its key only as the hint beside it (not "name (1)" besides)
                assert all(name in shown for name in CLASSES) and "(1)" not in shown, shown
                # the toggles fill a row of their own and Submit, Skip and Undo share the row below: no action is
                # left alone on a row of its own
                tops = page.locator(".st-key-class_buttons button").evaluate_all(
                    "els => els.map(e => Math.round(e.getBoundingClientRect().top))"
                )
                assert len(tops) == len(CLASSES) + 3, tops
                assert len(set(tops[:-3])) == 1 and len(set(tops[-3:])) == 1 and tops[-1] > tops[0], tops
                page.mouse.click(5, 5)  # focus out of any input so the keys reach the buttons
                for _ in range(5):
                    item = shown_item_index(page)
                    asked.append(item)
                    for k in GROUP_SETS[group[item]]:
                        pick_with_key(page, k)
                    submit_with_enter(page, item)
                    wait_for_app(page)
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
    assert [(e.item_index, e.answer_classes) for e in events] == [(i, GROUP_SETS[group[i]]) for i in asked[:-1]]
