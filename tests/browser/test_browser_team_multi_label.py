"""A multi-label team project in a real browser (Debian's Chromium, headless): an annotator signs in, the keys 1
and 3 pick their classes (the ticks show), Enter submits the set, U takes her last answer back; each answer is
stored with its set."""

from __future__ import annotations

import pytest

from tests.browser.test_browser import (
    OWNER_PASSWORD,
    AppServer,
    goto,
    item_caption,
    launch_browser,
    press_label_key,
    shown_item_index,
    wait_for_app,
)
from tests.browser.test_browser_multi_label import CLASSES, pick_with_key, submit_with_enter
from tests.browser.test_browser_team_classes import class_project

pytestmark = pytest.mark.browser


def test_an_annotator_toggles_classes_with_the_number_keys_submits_with_enter_and_u_undoes(tmp_path):
    from playwright.sync_api import sync_playwright

    from storage import teams
    from storage.engine import make_engine

    url, project_id, _ = class_project(tmp_path, strategy="random", classes=CLASSES, multi_label=True)
    asked = []
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                goto(page, server.url, "ann", OWNER_PASSWORD)  # her landing page: Label together
                page.wait_for_selector(".st-key-item_caption", timeout=60_000)
                wait_for_app(page)
                buttons = page.locator(".st-key-team_buttons").inner_text(timeout=30_000).replace("\u2060", "")
                # each class by its name, its key only as the hint beside it (not "name (1)" besides)
                assert all(name in buttons for name in CLASSES) and "(1)" not in buttons, buttons
                assert "Positive" not in buttons and "Submit" in buttons
                page.mouse.click(5, 5)  # focus out of any input so the keys reach the buttons
                for _ in range(2):
                    item = shown_item_index(page)
                    asked.append(item)
                    for k in (0, 2):  # keys 1 and 3
                        pick_with_key(page, k, "team_buttons")
                    submit_with_enter(page, item, "team_submit")
                    wait_for_app(page)
                press_label_key(page, "u", item_caption(page))
                wait_for_app(page)
                assert shown_item_index(page) == asked[-1]  # her last item is handed back to her
        finally:
            browser.close()
    engine = make_engine(url)
    try:
        _, answers = teams.project_answers(engine, project_id)
    finally:
        engine.dispose()
    assert [(a.annotator, a.item_index, a.answer_classes) for a in answers] == [("ann", asked[0], (0, 2))]
