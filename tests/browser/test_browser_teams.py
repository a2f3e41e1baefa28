"""Sign-in and teams in a real browser: Debian's Chromium, headless, against ``streamlit run``.

- An anonymous browser sees the sign-in page and nothing else, whatever address it asks for.
- An annotator sees only the pages of their role: no export, no data, nobody else's answers.
- Two annotators in two browsers label one project at the same time: every key press is one
  stored answer, and no item is answered twice.
- Label together shows a document, a molecule and a table row, to the owner and to an annotator.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.browser.test_browser import (
    OWNER,
    OWNER_PASSWORD,
    AppServer,
    ensure_account,
    go_to,
    goto,
    item_caption,
    launch_browser,
    shown_item_index,
    wait_for_app,
    wait_for_key_button,
)

pytestmark = pytest.mark.browser


def screenshot_folder(tmp_path) -> Path:
    """Where screenshots go: ``$MARGINLAB_SCREENSHOTS`` (docs/screenshots refreshes the docs' images), else tmp_path."""
    folder = os.environ.get("MARGINLAB_SCREENSHOTS", "").strip()
    return Path(folder) if folder else tmp_path


PAGES = (
    "no-such-page",
    "",
    "label",
    "data",
    "export",
    "compare",
    "projects",
    "team",
    "history",
    "sessions",
    "my_labels",
    "team_label",
)


def team_database(tmp_path, members=("ann", "bob"), **project) -> tuple[str, int]:
    """A database with the demo data, accounts for the owner and ``members``, and a project of theirs."""
    from app.services import MarginLab

    url = f"sqlite:///{tmp_path / 'team.db'}"
    for name in members:
        ensure_account(url, name, role="annotator")
    ensure_account(url, OWNER, role="owner")
    svc = MarginLab.from_url(url)
    svc.failure_delay_s = 0
    dataset_id = svc.ensure_demo_dataset()
    me = svc.sign_in(OWNER, OWNER_PASSWORD)
    project_id = svc.create_project(
        me, name="digits screening", dataset_id=dataset_id, strategy="near-boundary", members=list(members), **project
    )
    svc.engine.dispose()
    return url, project_id


def main_text(page) -> str:
    return page.locator("[data-testid='stApp']").inner_text(timeout=30_000)


def test_an_anonymous_browser_sees_the_sign_in_page_and_nothing_else(tmp_path):
    from playwright.sync_api import sync_playwright

    url, _ = team_database(tmp_path)
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = browser.new_page(viewport={"width": 1200, "height": 800})
                downloads = []
                page.on("download", lambda download: downloads.append(download))
                for path in PAGES:
                    page.goto(f"{server.url}/{path}")
                    wait_for_app(page)
                    page.wait_for_selector("h1:has-text('Sign in')", timeout=60_000)
                    text = main_text(page)
                    assert "digits" not in text and "8 vs rest" not in text, (path, text)
                    for word in ("Download", "Positive", "Export", "Projects", "Signed in as", "Item "):
                        assert word not in text, (path, word, text)
                    assert page.locator("[data-testid='stSidebarNav']").count() == 0, path
                    assert page.locator("[data-testid='stDownloadButton']").count() == 0, path
                    headings = page.locator("h1").all_inner_texts()
                    assert [h.strip() for h in headings] == ["Sign in"], (path, headings)
                assert downloads == []
                # a wrong password: told so, and still nothing else
                page.get_by_role("textbox", name="Name").fill("ann")
                page.get_by_role("textbox", name="Password").fill("not-her-password")
                page.get_by_role("button", name="Sign in", exact=True).click()
                page.wait_for_selector("text=Wrong name or password.", timeout=60_000)
                wait_for_app(page)
                assert page.locator("[data-testid='stSidebarNav']").count() == 0
                assert page.get_by_role("textbox", name="Password").input_value() == ""  # not kept
                page.screenshot(path=str(tmp_path / "sign-in.png"))
                page.goto(server.url)
                wait_for_app(page)
                page.screenshot(path=str(screenshot_folder(tmp_path) / "sign-in.png"))
                # the media and upload endpoints hand out nothing without a page that made them
                import urllib.error
                import urllib.request

                for endpoint in ("/media/", "/_stcore/upload_file/"):
                    try:
                        with urllib.request.urlopen(server.url + endpoint, timeout=10) as response:
                            body = response.read()
                    except urllib.error.HTTPError as error:
                        body = error.read()
                    assert b"digits" not in body and b"annotator" not in body
        finally:
            browser.close()


def test_an_annotator_cannot_export_or_read_another_annotator_s_answers(tmp_path):
    from playwright.sync_api import sync_playwright

    from app.services import MarginLab
    from storage import repository as repo

    url, project_id = team_database(tmp_path)
    svc = MarginLab.from_url(url)
    run = svc.open_project(project_id)
    y = repo.load_dataset_arrays(svc.engine, run.info.dataset_id)[1]
    bobs = []
    for _ in range(4):  # bob answers first, in a process of his own (the service)
        shown = run.next_item("bob")
        run.answer("bob", shown.item_index, int(y[shown.item_index]), shown)
        bobs.append(shown.item_index)
    svc.engine.dispose()
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                goto(page, server.url, "ann", OWNER_PASSWORD)
                nav = page.locator("[data-testid='stSidebarNav']").inner_text()
                assert "Label together" in nav and "My labels" in nav
                for hidden in ("Export", "Data", "Compare", "Projects", "Team"):
                    assert hidden not in nav.split("\n"), nav
                page.wait_for_selector(".st-key-item_caption", timeout=60_000)
                assert shown_item_index(page) not in bobs  # bob's items are not handed to ann
                mine = []
                for key in "pn":
                    before = item_caption(page)
                    mine.append(shown_item_index(page))
                    page.mouse.click(5, 5)
                    wait_for_key_button(page, key)  # (a first load: the buttons come just after the item)
                    page.locator("body").press(key)
                    page.wait_for_function(
                        "(old) => { const el = document.querySelector('.st-key-item_caption');"
                        " return el && el.innerText.trim() !== old; }",
                        arg=before,
                        timeout=30_000,
                    )
                    wait_for_app(page)
                # the owners' pages are not there for her, whatever the address (her browser keeps her sign-in)
                for path in ("export", "data", "projects", "team", "compare"):
                    page.goto(f"{server.url}/{path}")
                    page.wait_for_selector("[data-testid='stSidebar'] >> text=Signed in as ann", timeout=60_000)
                    wait_for_app(page)
                    page.wait_for_selector("h1", timeout=60_000)  # (the page after the sign-in is drawn)
                    headings = [h.strip() for h in page.locator("h1").all_inner_texts()]
                    assert headings == ["Label together"], (path, headings)
                    assert page.get_by_text("Page not found").count() == 0, path
                    assert page.locator("[data-testid='stDownloadButton']").count() == 0, path
                # her history holds her two answers and nobody else's
                go_to(page, "My labels")
                text = main_text(page)
                assert "2 answers by ann" in text, text
                assert "bob" not in text
                page.screenshot(path=str(tmp_path / "history.png"), full_page=True)
        finally:
            browser.close()
    svc = MarginLab.from_url(url)
    history = svc.own_history(svc.sign_in("ann", OWNER_PASSWORD))
    assert sorted(e.item_index for e in history) == sorted(mine)
    svc.engine.dispose()


def test_two_annotators_in_two_browsers_label_one_project_at_once(tmp_path):
    from playwright.sync_api import sync_playwright

    from app.services import MarginLab
    from storage import repository as repo
    from storage import teams

    url, project_id = team_database(tmp_path, labels_per_item=2, overlap_share=0.3)
    engine = MarginLab.from_url(url).engine
    y = repo.load_dataset_arrays(engine, teams.get_project(engine, project_id).dataset_id)[1]
    engine.dispose()
    presses = 10
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                pages = {}
                for name in ("ann", "bob"):
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    goto(page, server.url, name, OWNER_PASSWORD)
                    page.wait_for_selector(".st-key-item_caption", timeout=60_000)
                    pages[name] = page
                shown_at_once = {name: shown_item_index(page) for name, page in pages.items()}
                assert shown_at_once["ann"] != shown_at_once["bob"]  # reserved: never the same item at once
                answered = {"ann": [], "bob": []}
                for k in range(presses):
                    # both press a key before either waits for the next item: they label side by side
                    before = {}
                    for name, page in pages.items():
                        before[name] = item_caption(page)
                        item = shown_item_index(page)
                        answered[name].append(item)
                        right = y[item] == 1
                        if name == "bob" and k % 4 == 1:
                            right = not right  # bob sees some items differently
                        page.mouse.click(5, 5)
                        wait_for_key_button(page, "p" if right else "n")
                        page.locator("body").press("p" if right else "n")
                    for name, page in pages.items():
                        page.wait_for_function(
                            "(old) => { const el = document.querySelector('.st-key-item_caption');"
                            " return el && el.innerText.trim() !== old; }",
                            arg=before[name],
                            timeout=60_000,
                        )
                        wait_for_app(page)
                time.sleep(0.5)
                pages["ann"].screenshot(path=str(screenshot_folder(tmp_path) / "team-label.png"), full_page=True)
                # the owner's view of the project: progress and agreement
                owner_page = browser.new_page(viewport={"width": 1400, "height": 1500})
                goto(owner_page, f"{server.url}/projects")
                owner_page.wait_for_selector("text=Agreement", timeout=60_000)
                wait_for_app(owner_page)
                # (the page may still be drawing its later elements on a busy machine: wait for the metric)
                owner_page.wait_for_function(
                    "() => { const app = document.querySelector(\"[data-testid='stApp']\");"
                    ' return app && app.innerText.includes("Fleiss\' kappa"); }',
                    timeout=60_000,
                )
                text = main_text(owner_page)
                assert "Fleiss' kappa" in text, text
                owner_page.screenshot(path=str(screenshot_folder(tmp_path) / "projects.png"), full_page=True)
        finally:
            browser.close()
    engine = MarginLab.from_url(url).engine
    _, answers = teams.project_answers(engine, project_id)
    stored = sorted((a.annotator, a.item_index) for a in answers)
    assert stored == sorted((name, item) for name, items in answered.items() for item in items)
    assert len(stored) == 2 * presses  # every key press stored once, none lost
    info = teams.get_project(engine, project_id)
    per_item: dict[int, list[str]] = {}
    for a in answers:
        per_item.setdefault(a.item_index, []).append(a.annotator)
    for item, names in per_item.items():  # twice only where the project asked for a second answer
        assert len(names) == 1 or (len(set(names)) == 2 and teams.answers_needed(info, item) == 2), (item, names)
    engine.dispose()


def kind_database(tmp_path, kind: str) -> tuple[str, int]:
    """A database with a dataset shown as ``kind`` (tests.app.test_app_item_display) and a project on it whose
    members are the owner and the annotator ann."""
    from app.services import MarginLab
    from tests.app.test_app_item_display import import_kind

    url = f"sqlite:///{tmp_path / 'kinds.db'}"
    ensure_account(url, "ann", role="annotator")
    ensure_account(url, OWNER, role="owner")
    svc = MarginLab.from_url(url)
    dataset_id = import_kind(svc, kind)
    project_id = svc.create_project(
        svc.sign_in(OWNER, OWNER_PASSWORD),
        name=f"{kind} screening",
        dataset_id=dataset_id,
        strategy="near-boundary",
        members=[OWNER, "ann"],
    )
    svc.engine.dispose()
    return url, project_id


def item_box_text(page) -> str:
    return page.locator(".st-key-item_view").inner_text(timeout=30_000)


def assert_item_on_screen(page, kind: str, item: int) -> None:
    """The browser shows the item's own content in the item's box, and no exception box anywhere."""
    import base64

    from tests.app.test_app_item_display import MOLECULES, TABLE_COLUMNS, document, table_rows

    assert page.locator("[data-testid='stException']").count() == 0, main_text(page)
    box = page.locator(".st-key-item_view")
    if kind == "text":
        shown = page.locator(f".st-key-item_text_{item}").inner_text(timeout=30_000)  # (one text box per item)
        assert document(item) in shown, item_box_text(page)
    elif kind == "molecule":
        from core.features import molecule_svg

        smiles = MOLECULES[item][0]
        picture = box.locator("img")
        picture.wait_for(timeout=30_000)
        page.wait_for_function(
            "(img) => img.complete && img.naturalWidth > 0", arg=picture.element_handle(), timeout=30_000
        )  # drawn, not a broken image
        src = picture.get_attribute("src")
        prefix = "data:image/svg+xml;base64,"
        assert src.startswith(prefix) and base64.b64decode(src[len(prefix) :]).decode() == molecule_svg(smiles)
        assert smiles in item_box_text(page).split("\n"), item_box_text(page)
    else:
        # the grid is drawn on a canvas; its cells are also in an accessible table inside the canvas
        # (after an answer the grid's new cells follow the item's caption: wait for them to be the item's)
        grid = box.locator("[data-testid='stDataFrame']")
        grid.locator("[data-testid='glide-cell-1-0']").wait_for(state="attached", timeout=30_000)
        expected = dict(zip(TABLE_COLUMNS, table_rows()[item], strict=True))
        deadline = time.monotonic() + 30
        while True:
            rows = [[cell.text_content() for cell in row.locator("td").all()] for row in grid.locator("tbody tr").all()]
            shown = {row[0]: float(row[1]) for row in rows if len(row) == 2}
            if shown == pytest.approx(expected) or time.monotonic() > deadline:
                break
            page.wait_for_timeout(200)
        assert shown == pytest.approx(expected), (item, rows)


@pytest.mark.parametrize("kind", ["text", "molecule", "table"])
@pytest.mark.parametrize("name", [OWNER, "ann"])
def test_label_together_shows_documents_molecules_and_table_rows_to_owner_and_annotator(tmp_path, kind, name):
    """The owner (a member) opens Label together; the annotator ann lands on it after signing in."""
    from playwright.sync_api import sync_playwright

    url, _ = kind_database(tmp_path, kind)
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(url, tmp_path / "server.log") as server:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                goto(page, f"{server.url}/team_label" if name == OWNER else server.url, name, OWNER_PASSWORD)
                page.wait_for_selector("h1:has-text('Label together')", timeout=60_000)
                # the item, or the exception box that stood in its place
                page.wait_for_selector(".st-key-item_caption, [data-testid='stException']", timeout=60_000)
                wait_for_app(page)
                errors = page.locator("[data-testid='stException']").all_inner_texts()
                assert not errors, errors
                first = shown_item_index(page)
                assert_item_on_screen(page, kind, first)
                page.screenshot(path=str(tmp_path / f"{kind}-{name}.png"), full_page=True)
                # an answer: the next item is shown as well
                page.mouse.click(5, 5)
                wait_for_key_button(page, "n")
                before = item_caption(page)
                page.locator("body").press("n")
                page.wait_for_function(
                    "(old) => { const el = document.querySelector('.st-key-item_caption');"
                    " return el && el.innerText.trim() !== old; }",
                    arg=before,
                    timeout=30_000,
                )
                wait_for_app(page)
                assert shown_item_index(page) != first
                assert_item_on_screen(page, kind, shown_item_index(page))
        finally:
            browser.close()
