"""The Compare page's comparison with several classes in a browser: its progress moves, Cancel stops it with
nothing stored, and a run to its end is stored and shown with its kind."""

from __future__ import annotations

import numpy as np
import pytest

from app.services import MarginLab
from tests.browser.test_browser import AppServer, ensure_account, launch_browser, open_app, wait_for_app
from tests.browser.test_browser_pages import USER, enter_compare_fields, progress_moves

pytestmark = pytest.mark.browser


def k_class_database(tmp_path) -> str:
    """A database whose only dataset has a label column of three values kept as classes (1,500 items)."""
    url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    ensure_account(url, USER)
    svc = MarginLab.from_url(url)
    rng = np.random.default_rng(3)
    group = np.repeat([0, 1, 2], 500)
    X = np.column_stack([2.0 * group, -1.5 * (group == 1)]) + rng.normal(0, 1.0, (1500, 2))
    kinds = ["cat", "dog", "fox"]
    text = "a,b,kind\n" + "".join(f"{x:.3f},{y:.3f},{kinds[g]}\n" for (x, y), g in zip(X, group, strict=True))
    assert svc.import_csv(text.encode(), name="pets", label_column="kind", keep_classes=True).created
    svc.engine.dispose()
    return url


def test_a_k_class_comparison_shows_its_progress_cancel_stops_it_and_a_run_is_stored(tmp_path):
    from playwright.sync_api import sync_playwright

    url = k_class_database(tmp_path)
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = open_app(browser, server.url + "/compare", user=USER)
                page.wait_for_selector("text=Classes: cat, dog, fox", timeout=60_000)  # (offered first)
                enter_compare_fields(page, budget=300, seeds=10)
                page.get_by_role("button", name="Run the comparison").click()
                progress_moves(page, r"run \d+/40: .* · label \d+/300 · .* elapsed, about .* left")
                page.get_by_role("button", name="Cancel").click()
                page.wait_for_selector("text=Comparison cancelled", timeout=30_000)
                wait_for_app(page)
                assert MarginLab.from_url(url).comparisons() == []  # nothing stored
                enter_compare_fields(page, budget=12, seeds=1)
                page.get_by_role("button", name="Run the comparison").click()
                page.wait_for_selector("text=Stored comparisons", timeout=120_000)
                wait_for_app(page, timeout_ms=120_000)
                (stored,) = MarginLab.from_url(url).comparisons()
                assert stored.config["class_kind"] == "classes" and stored.config["budget"] == 12
                assert page.get_by_text("one class per item (3 classes: cat, dog, fox)").count() == 1
        finally:
            browser.close()
