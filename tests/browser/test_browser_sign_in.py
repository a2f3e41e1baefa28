"""A sign-in lasts for the browser, not the tab, in a real browser (Debian's Chromium, headless, driven by
Playwright): after signing in, a reload and a new tab at a bookmarked ``/label?session=N`` are signed in;
signing out in one tab signs out the other at its next run; script on the page never sees the cookie.
"""

from __future__ import annotations

import time

import pytest

from app.server_guard import SIGN_IN_COOKIE
from app.services import MarginLab
from tests.browser.test_browser import SIGNED_IN, AppServer, ensure_account, launch_browser, sign_in, wait_for_app

pytestmark = pytest.mark.browser

USER, PASSWORD = "ada", "browser-test-password"


def sign_in_cookies(context) -> list[dict]:
    return [c for c in context.cookies() if c["name"] == SIGN_IN_COOKIE]


def wait_for_cookies(context, present: bool, timeout: float = 60.0) -> list[dict]:
    """The browser's sign-in cookies once there is one (``present``) or none; fails after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sign_in_cookies(context)
        if bool(found) == present:
            return found
        time.sleep(0.2)
    raise AssertionError(f"the sign-in cookie is {'missing' if present else 'still there'}: {context.cookies()}")


def assert_sign_in_page(page) -> None:
    page.get_by_role("button", name="Sign in", exact=True).wait_for(timeout=60_000)
    wait_for_app(page)
    assert page.locator(SIGNED_IN).count() == 0


def test_a_sign_in_holds_for_the_browser_until_signed_out(tmp_path):
    from playwright.sync_api import sync_playwright

    url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    ensure_account(url, USER, password=PASSWORD)
    svc = MarginLab.from_url(url)
    dataset_id = svc.ensure_demo_dataset()
    older = svc.start_session(dataset_id=dataset_id, annotator=USER, strategy="random").session_id
    svc.start_session(dataset_id=dataset_id, annotator=USER, strategy="random")  # the most recent one
    svc.engine.dispose()
    with AppServer(url, tmp_path / "server.log") as server, sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            first = context.new_page()
            first.goto(server.url)
            wait_for_app(first)
            sign_in(first, USER, PASSWORD)
            [cookie] = wait_for_cookies(context, present=True)
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
            assert cookie["expires"] > time.time() + 11 * 3600  # (kept across a browser restart, until it expires)
            assert SIGN_IN_COOKIE not in first.evaluate("document.cookie")  # script on a page cannot read it
            # a reload: still signed in
            first.reload()
            first.wait_for_selector(SIGNED_IN, timeout=60_000)
            wait_for_app(first)
            assert first.get_by_role("button", name="Sign in", exact=True).count() == 0
            # a new tab at a bookmarked address: signed in, on that session
            second = context.new_page()
            second.goto(f"{server.url}/label?session={older}")
            second.wait_for_selector(SIGNED_IN, timeout=60_000)
            second.wait_for_selector(f".st-key-session_picker_{older}", timeout=60_000)
            wait_for_app(second)
            assert f"session={older}" in second.url
            # signing out in the first tab signs out the second at its next run, and the cookie goes
            first.locator("[data-testid='stSidebar']").get_by_role("button", name="Sign out").click()
            assert_sign_in_page(first)
            second.locator("[data-testid='stSidebarNav']").get_by_role("link", name="History", exact=True).click()
            assert_sign_in_page(second)
            wait_for_cookies(context, present=False)
            second.reload()
            assert_sign_in_page(second)
            # another browser (its own cookies) was never signed in
            stranger = browser.new_page()
            stranger.goto(f"{server.url}/label?session={older}")
            assert_sign_in_page(stranger)
        finally:
            browser.close()
