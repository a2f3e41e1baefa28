"""The stopping panel in a real browser (Debian's Chromium, headless): read the rules, run a recall check."""

from __future__ import annotations

import re
import time
from pathlib import Path

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
)

pytestmark = pytest.mark.browser


def prepare_session(db_url: str, n_labels: int) -> tuple[int, object]:
    """A largest-positive session on the demo digits with ``n_labels`` answered as the true labels say."""
    from app.services import MarginLab

    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    run = svc.start_session(dataset_id=dataset_id, annotator=OWNER, strategy="largest-positive")
    for _ in range(n_labels):
        item = run.shown.item_index
        assert run.answer(int(run.y_true[item]), item_index=item).ok
    truth = run.y_true
    svc.engine.dispose()
    return run.session_id, truth


def stopping_text(page) -> str:
    """The panel's text as read (without the invisible word joiners that keep user text plain)."""
    return page.locator(".st-key-stopping_panel").inner_text(timeout=60_000).replace("\u2060", "")


def label_page_with_a_check(db_url: str, screenshot: Path, n_labels: int = 120, draws: int = 6) -> dict:
    """Open the Label page of a prepared session, start the recall check, answer a few draws with the keys."""
    from playwright.sync_api import sync_playwright

    session_id, truth = prepare_session(db_url, n_labels)
    seen: dict = {"session": session_id}
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            log = Path(db_url.removeprefix("sqlite:///")).parent / "server.log"  # beside the database
            with AppServer(db_url, log) as server:
                page = open_app(browser, server.url)
                seen["before"] = stopping_text(page)
                page.get_by_role("button", name="Start the random check").click()
                page.wait_for_function("() => document.body.innerText.includes('drawn at random')", timeout=60_000)
                wait_for_app(page)
                page.mouse.click(5, 5)
                labelled = progress_labels(page)
                for _ in range(draws):
                    key = "p" if truth[shown_item_index(page)] > 0 else "n"
                    press_label_key(page, key, item_caption(page))
                    # each answer counted before the next key: a caption redrawn without an answer (a rerun
                    # of the page) must not let the next key fall into a run that drops it
                    labelled += 1
                    page.wait_for_function(
                        "(n) => { const el = document.querySelector('.st-key-progress');"
                        " const m = el && el.innerText.match(/([\\d,]+)\\s+labels?\\b/);"
                        " return m && Number(m[1].replace(/,/g, '')) === n; }",
                        arg=labelled,
                        timeout=30_000,
                    )
                    wait_for_app(page)
                time.sleep(0.5)
                wait_for_app(page)
                seen["after"] = stopping_text(page)
                seen["why"] = page.locator("body").inner_text().replace("\u2060", "")
                page.set_viewport_size({"width": 1400, "height": 1450})  # the whole Label page, top first
                page.evaluate(
                    "() => document.querySelectorAll('section, [data-testid=stMain]').forEach(el => el.scrollTo(0, 0))"
                )
                wait_for_app(page)
                page.screenshot(path=str(screenshot))
        finally:
            browser.close()
    return seen


def test_stopping_panel_and_recall_check_in_chromium(tmp_path):
    from app.services.vocabulary import rule_words
    from storage import repository as repo
    from storage.engine import make_engine

    db_url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    seen = label_page_with_a_check(db_url, tmp_path / "stopping.png")
    before, after = seen["before"], seen["after"]
    assert "When can I stop?" in before and "positives still unlabelled" in before.lower()
    for rule in ("statistical", "knee", "margin", "stability", "consecutive:50"):  # each rule in its words
        assert f"{rule_words(rule)}:" in before, (rule, before)
        assert f"{rule}:" not in before, (rule, before)
    assert (
        re.search(r"draw \d[\d,]* more random items to test recall ≥ 95% at 95% confidence", after)
        or "back to the model's picks" in seen["why"]
        or "you can stop" in after.lower()
    ), after
    assert (tmp_path / "stopping.png").stat().st_size > 20_000
    engine = make_engine(db_url)
    events = repo.label_events(engine, seen["session"])
    assert len(events) == 126 and {e.strategy for e in events[120:]} == {"random (recall check)"}
    engine.dispose()
