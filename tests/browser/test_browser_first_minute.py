"""The first minute in Chromium: on a new installation the first owner signs in and finds the demo open
on its first item, its answer buttons on screen, and labels it with a key."""

from __future__ import annotations

import re

import pytest

from tests.browser.test_browser import (
    OWNER,
    AppServer,
    item_caption,
    launch_browser,
    open_app,
    press_label_key,
    progress_labels,
    shown_item_index,
    wait_for_app,
    wait_for_key_button,
)

pytestmark = pytest.mark.browser


def test_the_first_sign_in_on_a_new_database_opens_the_demo_on_its_first_item(tmp_path):
    from playwright.sync_api import sync_playwright

    from app.services import DEMO_NAME, MarginLab

    db_url = f"sqlite:///{tmp_path / 'marginlab.db'}"  # nothing there yet: the server makes it
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(db_url, tmp_path / "server.log") as server:
                page = open_app(browser, server.url)  # the sign-in page, then where it leads: Label
                page.wait_for_selector("h1:has-text('Label')", timeout=60_000)
                page.wait_for_selector(".st-key-item_caption", timeout=60_000)
                wait_for_app(page)
                assert re.fullmatch(r"Item \d+ · digit-\d+", item_caption(page)), item_caption(page)
                first = shown_item_index(page)
                for key in "pns":  # Positive, Negative and Skip, on screen and enabled
                    wait_for_key_button(page, key)
                buttons = page.locator(".st-key-answer_buttons").inner_text()
                assert all(name in buttons for name in ("Positive", "Negative", "Skip")), buttons
                assert progress_labels(page) == 0
                page.screenshot(path=str(tmp_path / "first-minute.png"), full_page=True)
                page.mouse.click(5, 5)
                press_label_key(page, "p", item_caption(page))
                wait_for_app(page)
                assert progress_labels(page) == 1
                assert "Traceback" not in server.log(), server.log()[-3000:]
        finally:
            browser.close()
    from storage import repository as repo

    svc = MarginLab.from_url(db_url)
    try:
        (demo,) = svc.sessions()
        assert (demo.annotator, demo.dataset_name, demo.n_labels) == (OWNER, DEMO_NAME, 1)
        assert [(e.item_index, e.value) for e in repo.label_events(svc.engine, demo.id)] == [(first, 1)]
    finally:
        svc.engine.dispose()
