"""The app in a real browser: Debian's Chromium, headless, driven by Playwright.

A real ``streamlit run`` server is started on a free port with a temporary
database; the test labels items with the keyboard shortcuts, takes a
screenshot, stops the server, starts a new one on the same database and finds
the session resumed with the same labels.

Chromium comes from the system packages (``make browser-deps`` installs it);
it is never downloaded at run time. If it is missing the test fails and says so.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.browser

#: the account a browser signs in with unless a test says otherwise: the first owner, whose password the
#: server takes from MARGINLAB_OWNER_PASSWORD
OWNER, OWNER_PASSWORD = "owner", "browser-test-password"


# --------------------------------------------------------------------------- harness (also used by benchmarks/)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_health(url: str, process: subprocess.Popen, timeout: float) -> None:
    """Wait until the server at ``url`` answers its health check; RuntimeError when ``process`` exits
    first or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server's process exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not answer within {timeout:.0f} s")


class AppServer:
    """The app as ``make run`` starts it (``python -m app.serve``: ``streamlit run app/main.py``, warm) on
    127.0.0.1 with its own database, as a subprocess."""

    def __init__(self, database_url: str, log_path: Path, port: int | None = None, args: tuple[str, ...] = ()):
        self.database_url = database_url
        self.log_path = Path(log_path)
        self.port = port or free_port()
        self.args = tuple(args)  # more Streamlit options (``--server.maxUploadSize 1``)
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> AppServer:
        if self.process is not None and self.process.poll() is None:
            # (a second start would leave the first server running, and nothing would stop it)
            raise RuntimeError(f"this app server is already running (pid {self.process.pid})")
        env = dict(os.environ, MARGINLAB_DATABASE_URL=self.database_url, PYTHONUNBUFFERED="1")
        env.setdefault("MARGINLAB_OWNER_PASSWORD", OWNER_PASSWORD)  # the first owner: sign in as OWNER
        command = [
            sys.executable,
            "-m",
            "app.serve",  # as ``make run`` starts it (streamlit run, warm)
            "--server.port",
            str(self.port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
            *self.args,
        ]
        self._log = open(self.log_path, "ab")
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            wait_for_health(self.url, self.process, timeout)
            return self
        except RuntimeError as error:
            if self.process.poll() is not None:
                raise RuntimeError(f"the app server exited with {self.process.returncode}:\n{self.log()}") from error
        self.stop()
        raise RuntimeError(f"the app server did not answer /_stcore/health within {timeout:.0f} s:\n{self.log()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self.process = None
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def require_chromium() -> str:
    """The system Chromium's path; fails (not skips) with what to do when it is missing."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        found = shutil.which("chromium")
        if found is None:
            pytest.fail(
                f"Debian's Chromium is not installed at {CHROMIUM}; run `make browser-deps` "
                "(apt-get install chromium) and run the tests again.",
                pytrace=False,
            )
        return found
    return CHROMIUM


def launch_browser(playwright):
    return playwright.chromium.launch(executable_path=require_chromium(), headless=True, args=CHROMIUM_ARGS)


def wait_for_app(page, timeout_ms: int = 60_000) -> None:
    """Wait until no script run is going on (the app root carries the run state)."""
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout_ms)


#: the address path of each page (Streamlit's default: the view's file name) and its title in the navigation
PAGE_TITLES = {
    "data": "Data",
    "label": "Label",
    "history": "History",
    "sessions": "Sessions",
    "team_label": "Label together",
    "projects": "Projects",
    "compare": "Compare",
    "export": "Export",
    "team": "Team",
    "my_labels": "My labels",
}


def sign_in(page, user: str = OWNER, password: str = OWNER_PASSWORD) -> None:
    """Fill in the sign-in page and wait until the app behind it has drawn its first page."""
    page.get_by_role("textbox", name="Name").fill(user)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_selector(SIGNED_IN, timeout=60_000)
    wait_for_app(page)


def go_to(page, title: str) -> None:
    """Open a page through the navigation (the signed-in browser session goes on)."""
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name=title, exact=True).click()
    wait_for_app(page)
    page.wait_for_selector(f"h1:has-text('{title}')", timeout=60_000)
    wait_for_app(page)


#: the sidebar's line of a signed-in page
SIGNED_IN = "[data-testid='stSidebar'] >> text=Signed in as"


def goto(page, url: str, user: str = OWNER, password: str = OWNER_PASSWORD) -> None:
    """Load ``url`` as a visit of ``user``: signed in already where the browser keeps ``user``'s sign-in, else
    through the sign-in page (another person's sign-in the browser keeps is dropped first); then open its page."""
    from app.server_guard import SIGN_IN_COOKIE

    page.goto(url)
    page.locator(SIGNED_IN).or_(page.get_by_role("button", name="Sign in", exact=True)).first.wait_for(timeout=60_000)
    wait_for_app(page)
    shown = page.locator(SIGNED_IN)
    if shown.count() and f"Signed in as {user} (" not in shown.first.inner_text().replace("\u2060", ""):
        page.context.clear_cookies(name=SIGN_IN_COOKIE)  # (the browser forgets it: not a sign-out)
        page.goto(url)
        page.get_by_role("button", name="Sign in", exact=True).wait_for(timeout=60_000)
        wait_for_app(page)
    if page.get_by_role("button", name="Sign in", exact=True).count():
        sign_in(page, user, password)
        path = url.split("://", 1)[-1].partition("/")[2].strip("/")
        if path in PAGE_TITLES:  # the address's page follows the sign-in
            page.wait_for_selector(f"h1:has-text('{PAGE_TITLES[path]}')", timeout=60_000)
            wait_for_app(page)


def open_app(browser, url: str, user: str = OWNER, password: str = OWNER_PASSWORD):
    """A new page showing the app at ``url`` signed in as ``user``, once its script run has finished."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    goto(page, url, user, password)
    return page


def ensure_account(database_url: str, name: str, role: str = "owner", password: str = OWNER_PASSWORD) -> None:
    """An account to sign in with, created in the database before the server starts."""
    from tests.app.test_app import ensure_account as create

    create(database_url, name, role, password)


def item_caption(page) -> str:
    return page.locator(".st-key-item_caption").inner_text(timeout=30_000).strip()


def shown_item_index(page) -> int:
    match = re.search(r"Item (\d+)", item_caption(page))
    assert match, f"no item caption on screen: {item_caption(page)!r}"
    return int(match.group(1))


def progress_labels(page) -> int:
    text = page.locator(".st-key-progress").inner_text(timeout=30_000)
    match = re.search(r"(\d+)\s+labels?\b", text)
    assert match, f"no progress read-out: {text!r}"
    return int(match.group(1))


def start_session_in_ui(page, annotator: str, strategy: str | None = None, dataset: str | None = None) -> None:
    """Open the New session popover, enter the annotator and start (defaults: digits, first heuristic;
    ``dataset``: the dataset's option as the form shows it, e.g. ``"scale (100000 items)"``)."""
    page.get_by_role("button", name=re.compile("New session")).click()
    # the session is the signed-in person's (``annotator``): there is no name to type
    if dataset is not None:
        choose(page, "Dataset", dataset)
    if strategy is not None:
        from app.services import STRATEGY_WORDS

        page.get_by_role("combobox", name="How to pick the next item").click()
        page.get_by_role("option", name=STRATEGY_WORDS[strategy], exact=True).click()
    shown = page.evaluate("() => new URLSearchParams(window.location.search).get('session')")
    page.get_by_role("button", name="Start labelling").click()
    # The page may already show a session (the demo opens at a first owner's sign-in) with its item: wait for
    # the address to name another session, the one just started, before anything is pressed on it.
    page.wait_for_function(
        "(old) => new URLSearchParams(window.location.search).get('session') !== old", arg=shown, timeout=60_000
    )
    page.wait_for_selector(".st-key-item_caption", timeout=60_000)
    wait_for_app(page)


def wait_for_key_button(page, key: str, timeout_ms: int = 30_000) -> None:
    """Wait until the button whose shortcut is ``key`` is on screen and enabled, as a person waits to see
    the buttons before pressing.  On a page's first load the browser fetches a button's code after the
    item's caption is drawn (Streamlit loads each kind of element's code when it first needs it, and
    shows a placeholder meanwhile): a key pressed before that reaches no button and is lost."""
    page.wait_for_selector(f".stButton button:has([aria-label='Shortcut {key.upper()}']):enabled", timeout=timeout_ms)


def press_label_key(page, key: str, previous_caption: str, timeout_ms: int = 30_000) -> None:
    """Press a shortcut key (focus on the page body) once its button is on screen, and wait until
    another item is on screen."""
    wait_for_key_button(page, key, timeout_ms)
    page.locator("body").press(key)
    page.wait_for_function(
        "(old) => { const el = document.querySelector('.st-key-item_caption');"
        " return el && el.innerText.trim() !== old; }",
        arg=previous_caption,
        timeout=timeout_ms,
    )


# --------------------------------------------------------------------------- the test


def test_label_with_keys_then_restart_resumes_the_session(tmp_path):
    from playwright.sync_api import sync_playwright

    from storage import repository as repo
    from storage.engine import make_engine

    db_url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    n_keys = 6
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            ensure_account(db_url, "browser tester")
            with AppServer(db_url, tmp_path / "server1.log") as server:
                page = open_app(browser, server.url, "browser tester")
                start_session_in_ui(page, "browser tester")
                page.mouse.click(5, 5)  # move focus out of any input so the shortcuts reach the buttons
                keys = ["P", "N", "N", "P", "N", "N"][:n_keys]
                asked = []
                for key in keys:
                    before = item_caption(page)
                    asked.append(shown_item_index(page))
                    press_label_key(page, key.lower(), before)
                wait_for_app(page)
                assert progress_labels(page) == n_keys
                # a double click stores one label (the second click is refused or dropped)
                before = item_caption(page)
                asked.append(shown_item_index(page))
                keys.append("N")
                page.get_by_role("button", name="Negative").dblclick()
                page.wait_for_function(
                    "(old) => document.querySelector('.st-key-item_caption').innerText.trim() !== old",
                    arg=before,
                    timeout=30_000,
                )
                time.sleep(1.0)  # give a second, stale rerun time to arrive
                wait_for_app(page)
                assert progress_labels(page) == n_keys + 1
                page.screenshot(path=str(tmp_path / "label.png"), full_page=True)
                assert (tmp_path / "label.png").stat().st_size > 10_000
                shown_before_restart = shown_item_index(page)

            engine = make_engine(db_url)
            # the demo opened for the database's first owner (this tester) at sign-in, and the session started
            demo, session = sorted(repo.list_sessions(engine), key=lambda s: s.id)
            assert demo.n_labels == 0 and session.strategy == "near-boundary"
            events = repo.label_events(engine, session.id)
            assert [e.item_index for e in events] == asked
            assert [e.value for e in events] == [1 if k == "P" else -1 for k in keys]
            n_keys += 1  # the double click
            # the stopped server stored a snapshot of the session's model with every answer (the next
            # start resumes without learning them again)
            assert repo.latest_snapshot(engine, session.id).n_events == n_keys
            assert session.annotator == "browser tester"
            engine.dispose()

            with AppServer(db_url, tmp_path / "server2.log") as server:
                page = open_app(browser, server.url, "browser tester")
                page.wait_for_selector(".st-key-progress", timeout=60_000)
                assert progress_labels(page) == n_keys
                # the rebuilt model asks about the same item the first server was showing
                assert shown_item_index(page) == shown_before_restart
                # and labelling goes on from there
                before = item_caption(page)
                page.mouse.click(5, 5)
                press_label_key(page, "n", before)
                wait_for_app(page)
                assert progress_labels(page) == n_keys + 1

                # the Export page hands out the labels and the model state as files
                go_to(page, "Export")
                page.wait_for_selector("text=Model state of a session", timeout=60_000)
                wait_for_app(page)
                with page.expect_download() as download:
                    page.get_by_role("button", name="Download CSV").click()
                csv_path = tmp_path / "labels.csv"
                download.value.save_as(csv_path)
                lines = csv_path.read_text().strip().splitlines()
                assert len(lines) == 1 + n_keys + 1 and "annotator" in lines[0]
                with page.expect_download() as download:
                    page.get_by_role("button", name="Download the model state (.npz)").click()
                model_path = tmp_path / "model.npz"
                download.value.save_as(model_path)
                from core.solvers.base import OnlineSolver

                solver = OnlineSolver.load(model_path)
                assert solver.name == "incremental" and len(solver.learned_order) == n_keys + 1
        finally:
            browser.close()


def test_the_started_server_opens_its_database_before_the_first_page_view(tmp_path):
    """``make run``'s server (app.serve) opens the database while it starts: with no browser
    connected, the demo dataset and the first owner appear; the first page view then uses that
    service (one demo dataset, one owner, the page signs in)."""
    from app.services import MarginLab

    url = f"sqlite:///{tmp_path / 'warm.db'}"
    with AppServer(url, tmp_path / "server.log") as server:
        deadline, ready = time.monotonic() + 90, False
        while time.monotonic() < deadline and not ready:
            if (tmp_path / "warm.db").exists():
                svc = MarginLab.from_url(url)
                try:
                    ready = bool(svc.datasets()) and svc.sign_in(OWNER, OWNER_PASSWORD) is not None
                except Exception:
                    ready = False
                finally:
                    svc.engine.dispose()
            time.sleep(0.3)
        assert ready, server.log()
        require_chromium()
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = launch_browser(pw)
            page = open_app(browser, server.url)
            # signed in: the sidebar's Sign out button arrives with the page (waited for, not counted at
            # once: the sidebar's elements may be drawn one after the other)
            sign_out = page.get_by_role("button", name="Sign out")
            sign_out.wait_for(state="visible", timeout=30_000)
            assert sign_out.count() == 1
            browser.close()
        svc = MarginLab.from_url(url)
        try:
            assert len(svc.datasets()) == 1
        finally:
            svc.engine.dispose()
        assert "Traceback" not in server.log(), server.log()[-3000:]


def test_a_missing_chromium_fails_with_instructions(monkeypatch):
    """Without Debian's Chromium the browser test must fail (and say how to install it), not skip."""
    import tests.browser.test_browser as harness

    monkeypatch.setattr(harness, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setattr(harness.shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match="make browser-deps"):
        harness.require_chromium()


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the Streamlit selectbox labelled ``label``."""
    box = page.get_by_role("combobox", name=label)
    box.click()
    box.press_sequentially(option)  # long option lists are virtualised: filter first
    page.get_by_role("option", name=option, exact=True).click()


def choose_file_to_upload(page, base_url: str, path: Path) -> None:
    """Open the Data page's upload tab and give the file chooser ``path``."""
    goto(page, f"{base_url}/data")
    page.wait_for_selector("text=Datasets in the database", timeout=60_000)
    wait_for_app(page)
    page.get_by_role("tab", name="Upload a CSV").click()
    page.locator("input[type='file']").set_input_files(str(path))


def upload_csv_in_ui(
    page,
    base_url: str,
    path: Path,
    *,
    label_column: str | None = None,
    positive: str = "",
    key_column: str | None = None,
) -> None:
    choose_file_to_upload(page, base_url, path)
    page.wait_for_selector("text=True-label column (optional)", timeout=60_000)
    wait_for_app(page)
    if label_column:
        choose(page, "True-label column (optional)", label_column)
        wait_for_app(page)
    if positive:
        choose(page, "Positive value of the label column", positive)
        wait_for_app(page)
    if key_column:
        choose(page, "Item key column (optional)", key_column)
        wait_for_app(page)
    page.get_by_role("button", name="Import", exact=True).click()
    wait_for_app(page)


def test_upload_a_csv_and_see_errors_that_name_row_and_column(tmp_path):
    from playwright.sync_api import sync_playwright

    from storage import repository as repo
    from storage.engine import make_engine

    db_url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,label\n1,2,yes\n3,oops,no\n5,6,yes\n")
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(db_url, tmp_path / "server.log") as server:
                page = browser.new_page(viewport={"width": 1400, "height": 1400})
                upload_csv_in_ui(
                    page,
                    server.url,
                    ROOT / "assets" / "breast_cancer.csv",
                    label_column="diagnosis",
                    positive="malignant",
                    key_column="id",
                )
                page.wait_for_selector("text=Imported 'breast_cancer'", timeout=60_000)
                upload_csv_in_ui(page, server.url, bad, label_column="label", positive="yes")
                error = page.locator("[data-testid='stAlertContentError']").inner_text(timeout=60_000)
                assert "row 2" in error and "b" in error, error
                assert error.startswith("bad.csv: "), error  # the file the person uploaded, by name
                # only the fields of the chosen display are shown
                assert page.get_by_role("spinbutton", name="Image width").count() == 0
                assert page.get_by_role("combobox", name="Text column").count() == 0
                page.get_by_text("an image built from the features", exact=True).click()
                page.get_by_role("spinbutton", name="Image width").wait_for(timeout=30_000)
                assert page.get_by_role("combobox", name="Text column").count() == 0
                # an empty file is refused at once, without an import form to fill in
                empty = tmp_path / "empty.csv"
                empty.write_bytes(b"")
                choose_file_to_upload(page, server.url, empty)
                page.wait_for_selector("text=empty.csv: the file is empty", timeout=60_000)
                wait_for_app(page)
                assert page.get_by_role("button", name="Import", exact=True).count() == 0
        finally:
            browser.close()
    engine = make_engine(db_url)
    datasets = {d.name: d for d in repo.list_datasets(engine)}
    assert set(datasets) == {"digits: 8 vs rest", "breast_cancer"}  # the bad file changed nothing
    cancer = datasets["breast_cancer"]
    assert cancer.n_items == 569 and cancer.n_features == 30 and cancer.has_true_labels
    X, y, _, display = repo.load_dataset_arrays(engine, cancer.id)
    assert int((y == 1).sum()) == 212  # malignant cases in the Wisconsin diagnostic set
    assert display.item_keys[0] == "case_001"
    engine.dispose()


def test_shortcut_keys_do_nothing_while_new_session_is_open(tmp_path):
    """Keys typed while the New session form covers the item must not label it unseen."""
    from playwright.sync_api import sync_playwright

    from app.services import MarginLab
    from storage import repository as repo

    db_url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset()
    session_id = svc.start_session(dataset_id=dataset_id, annotator="ada", strategy="random").session_id
    svc.engine.dispose()
    ensure_account(db_url, "ada")
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(db_url, tmp_path / "server.log") as server:
                page = open_app(browser, server.url, "ada")
                page.wait_for_selector(".st-key-progress", timeout=60_000)
                shown = shown_item_index(page)
                page.get_by_role("button", name=re.compile("New session")).click()
                page.wait_for_selector("text=Labelling is paused while", timeout=30_000)
                wait_for_app(page)
                page.get_by_role("button", name="Start labelling").focus()
                for key in "npsu":
                    page.keyboard.press(key)
                time.sleep(1.0)
                wait_for_app(page)
                assert progress_labels(page) == 0 and shown_item_index(page) == shown
                # a mistake in the form is reported inside the form, where the person is looking
                page.get_by_text("Advanced", exact=True).click()  # (gamma is among the model's settings)
                page.get_by_role("textbox", name="gamma").fill("abc")
                page.get_by_role("button", name="Start labelling").click()
                page.locator("[data-testid='stPopoverBody'] [data-testid='stAlertContentError']").filter(
                    has_text="gamma must be 'scale' or a positive number"
                ).wait_for(timeout=30_000)
                wait_for_app(page)
                page.keyboard.press("Escape")  # close the form: the keys label again
                page.wait_for_selector("text=Labelling is paused while", state="detached", timeout=30_000)
                wait_for_app(page)
                page.mouse.click(5, 5)
                press_label_key(page, "n", item_caption(page))
                wait_for_app(page)
                assert progress_labels(page) == 1
        finally:
            browser.close()
    engine = MarginLab.from_url(db_url).engine
    events = repo.label_events(engine, session_id)
    assert [(e.item_index, e.value) for e in events] == [(shown, -1)]
    engine.dispose()
