"""The pages in a real browser (Debian's Chromium, headless, driven by Playwright): bookmarkable addresses,
keyboard focus after switching sessions, the Compare form and Enter, and the label history.

Each test starts ``streamlit run`` on a free port with a database it prepared through the service, drives
the page as a person would, and then checks the database (and, for the label history, the stored model).
"""

from __future__ import annotations

import os
import re
import time

import numpy as np
import pytest

from app.services import MarginLab
from app.services.common import answer_words
from core.loop import ActiveLearningLoop
from storage import history as stored_history
from storage import repository as repo
from tests.browser.test_browser import (
    AppServer,
    ensure_account,
    goto,
    item_caption,
    launch_browser,
    open_app,
    shown_item_index,
    wait_for_app,
    wait_for_key_button,
)

pytestmark = pytest.mark.browser

USER = "ada"  # an owner account: every page is hers


def prepared(tmp_path, sessions=((USER, "random"), (USER, "random")), labels=0):
    """A database with the demo dataset and labelling sessions (the last one is the most recent)."""
    url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    ensure_account(url, USER)  # the sessions' annotator signs in (the Label page lists one's own sessions)
    svc = MarginLab.from_url(url)
    dataset_id = svc.ensure_demo_dataset()
    ids = []
    for annotator, strategy in sessions:
        run = svc.start_session(dataset_id=dataset_id, annotator=annotator, strategy=strategy)
        while run.n_labels < labels:
            item = run.shown.item_index
            run.answer(int(run.y_true[item]), item_index=item)
        ids.append(run.session_id)
    svc.engine.dispose()
    return url, ids


def heading(page) -> str:
    return page.locator("h1").first.inner_text(timeout=30_000).strip()


def no_page_not_found(page) -> None:
    time.sleep(0.5)
    assert page.get_by_text("Page not found").count() == 0, page.url


def test_every_page_has_an_address_and_a_link_reopens_its_session(tmp_path):
    from playwright.sync_api import sync_playwright

    url, (older, newer) = prepared(tmp_path)
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = open_app(browser, server.url + "/label", user=USER)
                no_page_not_found(page)
                assert heading(page) == "Label"
                for path, title in (("data", "Data"), ("compare", "Compare heuristics"), ("export", "Export")):
                    goto(page, f"{server.url}/{path}", user=USER)
                    no_page_not_found(page)
                    assert heading(page) == title, path
                # the session is in the address: a link to the older session opens it, not the most recent
                goto(page, f"{server.url}/label?session={older}", user=USER)
                page.wait_for_selector(".st-key-item_caption", timeout=60_000)
                no_page_not_found(page)
                shown = shown_item_index(page)
                page.mouse.click(5, 5)
                before = item_caption(page)
                wait_for_key_button(page, "n")  # (a first load: the buttons come just after the item)
                page.keyboard.press("n")
                page.wait_for_function(
                    "(old) => document.querySelector('.st-key-item_caption').innerText.trim() !== old",
                    arg=before,
                    timeout=30_000,
                )
                wait_for_app(page)
                assert f"session={older}" in page.url
                # and "/" still opens the Label page
                goto(page, server.url, user=USER)
                assert heading(page) == "Label"
        finally:
            browser.close()
    engine = MarginLab.from_url(url).engine
    assert [(e.item_index, e.value) for e in repo.label_events(engine, older)] == [(shown, -1)]
    assert repo.label_events(engine, newer) == []
    engine.dispose()


def test_keys_label_right_after_switching_sessions(tmp_path):
    """After a session is chosen in the Session box the keyboard focus stayed there: N typed "n" into it."""
    from playwright.sync_api import sync_playwright

    url, (older, newer) = prepared(tmp_path)
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = open_app(browser, server.url, user=USER)
                page.wait_for_selector(".st-key-item_caption", timeout=60_000)
                box = page.get_by_role("combobox", name="Session")
                box.click()
                page.get_by_role("option", name=re.compile(f"^#{older} ")).click()
                wait_for_app(page)
                time.sleep(0.5)
                wait_for_app(page)
                shown = shown_item_index(page)
                before = item_caption(page)
                page.keyboard.press("n")  # straight away, wherever the focus is
                page.wait_for_function(
                    "(old) => document.querySelector('.st-key-item_caption').innerText.trim() !== old",
                    arg=before,
                    timeout=60_000,
                )
                wait_for_app(page)
        finally:
            browser.close()
    engine = MarginLab.from_url(url).engine
    assert [(e.item_index, e.value) for e in repo.label_events(engine, older)] == [(shown, -1)]
    assert repo.label_events(engine, newer) == []
    engine.dispose()


def enter_compare_fields(page, *, budget: int, seeds: int) -> None:
    """Type the label budget and the number of seeds, each followed by Enter (which only takes the value)."""
    for name, value in (("Label budget", budget), ("Seeds", seeds)):
        field = page.get_by_role("spinbutton", name=name)
        field.fill(str(value))
        field.press("Enter")
        wait_for_app(page)


def test_enter_in_a_compare_field_does_not_start_a_run(tmp_path):
    from playwright.sync_api import sync_playwright

    url, _ = prepared(tmp_path, sessions=())
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = open_app(browser, server.url + "/compare", user=USER)
                page.wait_for_selector("text=Compare heuristics", timeout=60_000)
                enter_compare_fields(page, budget=12, seeds=1)
                time.sleep(2.0)
                wait_for_app(page)
                assert MarginLab.from_url(url).comparisons() == []  # nothing started
                page.get_by_role("button", name="Run the comparison").click()
                page.wait_for_selector("text=Stored comparisons", timeout=120_000)
                wait_for_app(page, timeout_ms=120_000)
                (stored,) = MarginLab.from_url(url).comparisons()
                assert stored.config["budget"] == 12
                shown = page.get_by_role("combobox", name="Stored comparisons").input_value()
                assert shown.startswith(f"#{stored.id} · digits"), shown
        finally:
            browser.close()


def progress_moves(page, running: str, seconds: float = 120) -> None:
    """Wait until the progress bar's text matches ``running``, then until it changes (within ``seconds``)."""
    bar = page.locator("[data-testid='stProgress']")

    def bar_text() -> str:
        # (the bar shows its text as plain text: invisible word joiners follow each colon)
        return bar.inner_text(timeout=60_000).replace("\u2060", "") if bar.count() else ""

    deadline = time.monotonic() + seconds
    text = bar_text()
    while not re.search(running, text) and time.monotonic() < deadline:
        page.wait_for_timeout(200)
        text = bar_text()
    assert re.search(running, text), text
    later = bar_text()
    while later == text and time.monotonic() < deadline:  # it moves
        page.wait_for_timeout(200)
        later = bar_text()
    assert later != text, later


def server_cpu_seconds(server) -> float:
    """CPU time (user + system) the app server's process has used so far (Linux /proc)."""
    fields = open(f"/proc/{server.process.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_running_comparison_shows_its_progress_and_cancel_stops_it(tmp_path):
    from playwright.sync_api import sync_playwright

    url, _ = prepared(tmp_path, sessions=())
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = open_app(browser, server.url + "/compare", user=USER)
                page.wait_for_selector("text=Compare heuristics", timeout=60_000)
                enter_compare_fields(page, budget=500, seeds=10)
                page.get_by_role("button", name="Run the comparison").click()
                # progress: the runs (or, in a run that lasts, its labels) done, elapsed and time left (the
                # text within a run is checked in test_comparisons: runs on the demo data take a fraction of
                # a second, and the bar is told a few times a second)
                progress_moves(page, r"(\d+/\d+ runs done|run \d+/\d+: .* · label \d+/\d+) · .* elapsed, about .* left")
                page.get_by_role("button", name="Cancel").click()
                page.wait_for_selector("text=Comparison cancelled", timeout=30_000)
                wait_for_app(page)
                assert not page.locator("[data-testid='stProgress']").count()
                assert MarginLab.from_url(url).comparisons() == []  # nothing stored
                # no work left behind: the server is idle (a comparison still running would use a core)
                page.wait_for_timeout(1000)
                before = server_cpu_seconds(server)
                page.wait_for_timeout(3000)
                assert server_cpu_seconds(server) - before < 0.3
                enter_compare_fields(page, budget=12, seeds=1)
                page.get_by_role("button", name="Run the comparison").click()
                page.wait_for_selector("text=Stored comparisons", timeout=120_000)
                wait_for_app(page, timeout_ms=120_000)
                (stored,) = MarginLab.from_url(url).comparisons()
                assert stored.config["budget"] == 12
        finally:
            browser.close()


# --------------------------------------------------------------------------- the label history


def scores(loop):
    return loop.solver.decision_function(np.arange(loop.n_items))


@pytest.mark.parametrize(("strategy", "solver"), [("near-boundary", "incremental"), ("randomized-search", "lasvm")])
def test_change_a_label_made_20_labels_ago_in_the_label_history(tmp_path, strategy, solver):
    from playwright.sync_api import sync_playwright

    url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    ensure_account(url, USER)  # the sessions' annotator signs in (the Label page lists one's own sessions)
    svc = MarginLab.from_url(url)
    dataset_id = svc.ensure_demo_dataset()
    run = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy=strategy, solver=solver)
    while run.n_labels < 26:
        item = run.shown.item_index
        run.answer(int(run.y_true[item]), item_index=item)
    target = [a for a in run.answers if a.value != 0][-21]  # 20 labels were given after it
    session_id, old = run.session_id, target.value
    names = {value: answer_words(value, run.class_names) for value in run.class_names}  # (as History says them)
    svc.engine.dispose()
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = open_app(browser, f"{server.url}/history?session={session_id}", user=USER)
                page.wait_for_selector("text=Answer to change", timeout=60_000)
                box = page.get_by_role("combobox", name="Answer to change")
                box.click()
                box.press_sequentially(f"item {target.item_index} ")
                page.get_by_role("option", name=re.compile(f"item {target.item_index} .*20 labels ago")).click()
                wait_for_app(page)
                page.get_by_role("button", name=f"Change to {names[-old]}").click()
                page.wait_for_selector(f"text=Item {target.item_index} changed from", timeout=60_000)
                wait_for_app(page)
                if solver == "incremental":
                    exact = page.get_by_text("unlearned and learned again (exact)")
                    exact.wait_for(state="visible", timeout=30_000)
                    assert exact.count() == 1
                page.screenshot(path=str(tmp_path / "history.png"), full_page=True)
                assert (tmp_path / "history.png").stat().st_size > 10_000
        finally:
            browser.close()
    svc = MarginLab.from_url(url)
    events = repo.label_events(svc.engine, session_id)
    assert next(e.value for e in events if e.label_id == target.label_id) == -old
    (correction,) = stored_history.label_corrections(svc.engine, session_id)
    assert (correction.annotator, correction.old_value, correction.new_value) == ("ada", old, -old)
    # the server's model, as it stored it with the correction, is the model of the corrected answers
    resumed = svc.open_session(session_id)
    assert resumed.resumed_from == len(events)
    corrected = [(resumed.pool_of_item[e.item_index], e.value) for e in events]
    from_start = ActiveLearningLoop.from_events(corrected, **resumed._loop_data(), **resumed._loop_config())
    if solver == "incremental":
        np.testing.assert_allclose(scores(resumed.loop), scores(from_start), rtol=0, atol=1e-8)
        assert resumed.loop.solver.kkt_gap() <= max(resumed.loop.solver.tol, 1e-8)
    else:
        assert np.array_equal(scores(resumed.loop), scores(from_start))
    svc.engine.dispose()


def test_import_labels_from_a_file_on_the_sessions_page(tmp_path):
    from playwright.sync_api import sync_playwright

    url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    ensure_account(url, USER)  # the sessions' annotator signs in (the Label page lists one's own sessions)
    svc = MarginLab.from_url(url)
    svc.ensure_demo_dataset()
    cancer = svc.import_bundled("breast-cancer").dataset_id
    run = svc.start_session(dataset_id=cancer, annotator="ida", strategy="near-boundary")
    names, keys = run.class_names, run.display.item_keys
    pool = [int(i) for i in run.pool_items[:25]]
    review = tmp_path / "review.csv"
    review.write_text("case,verdict,notes\n" + "".join(f"{keys[i]},{names[int(run.y_true[i])]},seen\n" for i in pool))
    bad = tmp_path / "bad.csv"
    bad.write_text("case,verdict\ncase_000x,malignant\n" + f"{keys[pool[0]]},unsure\n")
    session_id = run.session_id
    svc.engine.dispose()
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = open_app(browser, f"{server.url}/sessions?session={session_id}", user=USER)
                page.wait_for_selector("text=Import labels into this session", timeout=60_000)
                page.locator("input[type='file']").set_input_files(str(bad))
                page.wait_for_selector("text=Item key column", timeout=60_000)
                wait_for_app(page)
                page.get_by_role("button", name="Import labels").click()
                error = page.locator("[data-testid='stAlertContentError']").inner_text(timeout=60_000)
                assert "Nothing was imported from bad.csv: 2 rows cannot be used." in error, error
                assert "row 1: key 'case_000x' is not an item" in error and "row 2: label 'unsure'" in error
                page.locator("input[type='file']").set_input_files(str(review))
                wait_for_app(page)
                page.get_by_role("button", name="Import labels").click()
                page.wait_for_selector("text=Imported 25 answers from review.csv", timeout=60_000)
                wait_for_app(page)
                page.screenshot(path=str(tmp_path / "sessions.png"), full_page=True)
        finally:
            browser.close()
    svc = MarginLab.from_url(url)
    events = repo.label_events(svc.engine, session_id)
    assert [(e.item_index, e.value, e.strategy) for e in events] == [(i, int(run.y_true[i]), "imported") for i in pool]
    svc.engine.dispose()


#: the Compare summary's table in the page: its grid's scrolled width and its visible width (the first table after
#: the heading "Summary")
SUMMARY_WIDTHS = """() => {
    const head = [...document.querySelectorAll('h3')].find(h => h.innerText.trim() === 'Summary');
    const after = [...document.querySelectorAll('[data-testid=stDataFrame]')].filter(
        f => head && (head.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_FOLLOWING));
    const grid = after.length ? after[0].querySelector('.dvn-scroller') : null;
    return grid ? [grid.scrollWidth, grid.clientWidth] : null;
}"""


def test_the_compare_summary_with_several_models_fits_a_1400_pixel_window(tmp_path):
    from playwright.sync_api import sync_playwright

    url, _ = prepared(tmp_path, sessions=())
    svc = MarginLab.from_url(url)
    # each heuristic on its own model (the model column shown), a budget that finds half the positives (long cells)
    svc.run_comparison(
        svc.datasets()[0].id, strategies=["near-boundary", "random", "largest-positive"], budget=160, seeds=2, initial=4
    )
    svc.engine.dispose()
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = open_app(browser, server.url + "/compare", user=USER)  # (a 1,400-pixel wide window)
                page.wait_for_selector("h3:has-text('Summary')", timeout=120_000)
                wait_for_app(page)
                page.wait_for_function(f"({SUMMARY_WIDTHS})() !== null", timeout=60_000)
                scrolled, visible = page.evaluate(SUMMARY_WIDTHS)
                assert scrolled <= visible, (scrolled, visible)  # the last column is not cut
        finally:
            browser.close()
