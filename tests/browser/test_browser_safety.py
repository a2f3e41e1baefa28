"""Safe by default, checked where it matters: in a real browser and on the real server.

- The server listens on 127.0.0.1 only, wherever it is started from (Streamlit reads a
  config.toml beside the main script; the one in the current directory is not needed).
- Every user-controlled string (dataset, file, column and annotator names, item keys, messages
  that quote them) is shown as plain text: a dataset named like a Markdown link and image,
  columns and keys with backticks, HTML tags: headless Chromium finds no link, no image and
  no request to the addresses they name, and finds the text itself on the page.
"""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from tests.browser.test_browser import (
    ROOT,
    AppServer,
    choose,
    choose_file_to_upload,
    ensure_account,
    free_port,
    goto,
    item_caption,
    launch_browser,
    open_app,
    press_label_key,
    wait_for_app,
)

pytestmark = pytest.mark.browser

#: nothing listens there: a link, an image or a request to it can only come from user text
TRAP = "127.0.0.1:9"
HOSTILE = (
    f"[x](http://{TRAP}/a) ![p](http://{TRAP}/p.png) <b>b</b> <img src='http://{TRAP}/i.png'> "
    f"http://{TRAP}/auto :red[red] $x^2$ *e*"
)
HOSTILE_COLUMN = f"`c` [col](http://{TRAP}/c) ![pc](http://{TRAP}/pc.png)"
HOSTILE_KEY = f"`k` [k](http://{TRAP}/k) ![pk](http://{TRAP}/pk.png) <b>kb</b>"

#: elements that would show that user text was read as Markdown or HTML
TRAPPED = f"""() => {{
    const hits = [];
    for (const el of document.querySelectorAll('*')) {{
        for (const name of ['href', 'xlink:href', 'src', 'srcset', 'data', 'action', 'poster']) {{
            const value = el.getAttribute(name);
            if (value && value.includes('{TRAP}')) hits.push(el.tagName + ' ' + name + '=' + value);
        }}
    }}
    for (const el of document.querySelectorAll('b, strong, em')) {{
        if (['b', 'kb', 'e'].includes(el.textContent.trim())) hits.push(el.tagName + ' ' + el.textContent);
    }}
    return hits;
}}"""


def visible(text: str) -> str:
    """Text as a reader sees it (without the invisible word joiners ``app.ui.text.plain`` adds)."""
    return text.replace("\u2060", "")


def assert_plain(page, requests: list[str], where: str) -> None:
    wait_for_app(page)
    hits = page.evaluate(TRAPPED)
    assert not hits, (where, hits)
    assert not requests, (where, requests)


def hostile_csv(path, *, bad_value: bool = False) -> None:
    rng = np.random.default_rng(0)
    rows = []
    for k in range(60):
        label = "yes" if k % 2 else "no"
        x = rng.normal(1.0 if k % 2 else -1.0, 1.0, size=2)
        value = "oops" if bad_value and k == 3 else f"{x[1]:.4f}"
        key = HOSTILE_KEY if k == 0 else f"`key {k}`"
        rows.append(f'{x[0]:.4f},{value},{label},"{key}"')
    path.write_text(f'a,"{HOSTILE_COLUMN}",label,key\n' + "\n".join(rows) + "\n")


def test_user_text_is_shown_as_plain_text_on_every_page(tmp_path):
    from playwright.sync_api import sync_playwright

    from app.services import MarginLab
    from storage import repository as repo

    db_url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    bad = tmp_path / "bad [f](http:x) `f`.csv"
    good = tmp_path / "hostile.csv"
    hostile_csv(bad, bad_value=True)
    hostile_csv(good)
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(db_url, tmp_path / "server.log") as server:
                page = open_app(browser, server.url)
                requests: list[str] = []
                page.on("request", lambda request: requests.append(request.url) if TRAP in request.url else None)

                # Data: an error naming the hostile column and the file
                choose_file_to_upload(page, server.url, bad)
                page.wait_for_selector("text=True-label column (optional)", timeout=60_000)
                assert_plain(page, requests, "preview")
                choose(page, "True-label column (optional)", "label")
                wait_for_app(page)
                page.get_by_role("button", name="Import", exact=True).click()
                error = visible(page.locator("[data-testid='stAlertContentError']").inner_text(timeout=60_000))
                assert HOSTILE_COLUMN in error and bad.name in error, error
                assert_plain(page, requests, "import error")

                # Data: "Imported '<name>'" with the hostile name typed into the Name field
                choose_file_to_upload(page, server.url, good)
                page.wait_for_selector("text=True-label column (optional)", timeout=60_000)
                wait_for_app(page)
                page.get_by_role("textbox", name="Name").fill(HOSTILE)
                page.get_by_role("textbox", name="Name").press("Enter")
                wait_for_app(page)
                choose(page, "True-label column (optional)", "label")
                wait_for_app(page)
                choose(page, "Item key column (optional)", "key")
                wait_for_app(page)
                page.get_by_role("button", name="Import", exact=True).click()
                success = visible(page.locator("[data-testid='stAlertContentSuccess']").inner_text(timeout=60_000))
                assert success.startswith(f"Imported '{HOSTILE}' as dataset"), success
                assert_plain(page, requests, "imported")

                # a session by an annotator with the hostile name, its first item the hostile key
                svc = MarginLab.from_url(db_url)
                dataset_id = next(d.id for d in svc.datasets() if d.name == HOSTILE)
                run = svc.start_session(dataset_id=dataset_id, annotator=HOSTILE, strategy="random", seed=0)
                first = run.shown.item_index
                keys = repo.load_dataset_arrays(svc.engine, dataset_id)[3].item_keys
                svc.engine.dispose()
                ensure_account(db_url, HOSTILE)  # a person whose name is the hostile text, signed in
                goto(page, server.url, HOSTILE)
                page.wait_for_selector(".st-key-item_caption", timeout=60_000)
                caption = visible(item_caption(page))
                assert caption == f"Item {first} · {keys[first]}", caption
                assert_plain(page, requests, "label")
                for key in "pnpnpn":  # a few labels: the session's curve joins the Compare overlay
                    page.mouse.click(5, 5)
                    press_label_key(page, key, item_caption(page))
                assert_plain(page, requests, "label after answers")
                chosen = page.get_by_role("combobox", name="Session").input_value()
                assert HOSTILE in chosen, chosen  # the selectbox shows its options as they are

                # Compare (dataset name in the options, annotator in the overlay legend), Export, Data
                svc = MarginLab.from_url(db_url)
                svc.run_comparison(dataset_id, strategies=["random"], budget=8, seeds=1, initial=4)
                svc.engine.dispose()
                for path, ready in (
                    ("compare", "Stored comparisons"),
                    ("export", "Model state of a session"),
                    ("history", "Answer to change"),
                    ("sessions", "Import labels into"),
                    ("data", "Datasets in the database"),
                ):
                    goto(page, f"{server.url}/{path}", HOSTILE)
                    page.wait_for_selector(f"text={ready}", timeout=60_000)
                    assert_plain(page, requests, path)
                    if path == "compare":
                        page.get_by_text("Overlay the labelling sessions on this dataset").click()  # off at first
                        wait_for_app(page)
                        # the page's other charts have legends too: wait for the overlay's entries
                        deadline = time.monotonic() + 60
                        legend = page.locator(".legendtext").all_text_contents()
                        while not any(HOSTILE in text for text in legend) and time.monotonic() < deadline:
                            page.wait_for_timeout(250)
                            legend = page.locator(".legendtext").all_text_contents()
                        assert any(HOSTILE in text for text in legend), legend
                        assert_plain(page, requests, "compare legend")
                    if path == "data":
                        page.get_by_role("tab", name="Upload a CSV").click()
                page.screenshot(path=str(tmp_path / "plain.png"), full_page=True)
        finally:
            browser.close()


def test_plain_keeps_every_character_and_leaves_no_markup():
    from app.ui.text import plain
    from tests.app.test_app import as_shown

    for text in (HOSTILE, HOSTILE_COLUMN, HOSTILE_KEY, "a\\b", "100% ~ {x} | y", "1. item", "# title", ""):
        escaped = plain(text)
        assert as_shown(escaped) == text
        # every punctuation character comes escaped: nothing is left for Markdown to read
        assert re.fullmatch(r"(?:\\[!-/:-@\[-`{-~]|[^!-/:-@\[-`{-~])*", escaped), escaped
        # and nothing for the autolink, emoji and icon finders that run after escapes are resolved
        unescaped = re.sub(r"\\(.)", r"\1", escaped)
        assert not re.search(r"https?://|www\.|@\w|:\w", unescaped, re.IGNORECASE), unescaped


# --------------------------------------------------------------------------- the address the server listens on


def listening_addresses(port: int) -> set[str]:
    """The local addresses with a TCP socket listening on ``port`` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            for line in handle.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, port_hex = local.split(":")
                if state == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
                    raw = bytes.fromhex(address)
                    # /proc prints each 32-bit word in host (little-endian) order
                    words = b"".join(raw[k : k + 4][::-1] for k in range(0, len(raw), 4))
                    found.add(str(ipaddress.ip_address(words)))
    return found


@pytest.mark.parametrize("how", ["streamlit run", "python -m streamlit run", "app/serve.py"])
def test_the_server_listens_on_127_0_0_1_only_when_started_from_another_directory(tmp_path, how):
    port = free_port()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(
        os.environ, HOME=str(elsewhere), MARGINLAB_DATABASE_URL=f"sqlite:///{tmp_path / 'm.db'}", PYTHONUNBUFFERED="1"
    )
    env.pop("STREAMLIT_SERVER_ADDRESS", None)
    if how == "app/serve.py":  # what make run starts, here as a script from another directory
        command = [sys.executable, str(ROOT / "app" / "serve.py")]
    else:
        streamlit = (
            [str(os.path.join(os.path.dirname(sys.executable), "streamlit"))]
            if how == "streamlit run"
            else [sys.executable, "-m", "streamlit"]
        )
        command = [*streamlit, "run", str(ROOT / "app" / "main.py")]
    command += ["--server.port", str(port), "--server.headless", "true", "--server.fileWatcherType", "none"]
    log = open(tmp_path / "server.log", "wb")
    server = subprocess.Popen(command, cwd=elsewhere, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert server.poll() is None, (tmp_path / "server.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
                    if response.read().strip() == b"ok":
                        break
            except OSError:
                time.sleep(0.2)
        else:
            raise AssertionError("the server did not answer:\n" + (tmp_path / "server.log").read_text())
        assert listening_addresses(port) == {"127.0.0.1"}
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=15)
        log.close()


def test_the_started_app_does_not_reload_its_modules_unless_asked(monkeypatch):
    """app.serve passes Streamlit --server.fileWatcherType none unless the caller chose a file watcher."""
    import sys

    from streamlit.web import cli

    from app import serve

    seen = []
    monkeypatch.setattr(serve, "warm_start", lambda: None)
    monkeypatch.setattr(cli, "main", lambda: seen.append(list(sys.argv)))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    serve.main(["--server.port", "8600"])
    serve.main(["--server.fileWatcherType", "auto", "--server.port", "8600"])
    serve.main(["--server.fileWatcherType=poll"])
    assert seen[0][3:] == ["--server.fileWatcherType", "none", "--server.port", "8600"]
    assert seen[1][3:] == ["--server.fileWatcherType", "auto", "--server.port", "8600"]
    assert seen[2][3:] == ["--server.fileWatcherType=poll"]
    assert all(run[:3] == ["streamlit", "run", str(serve.MAIN)] for run in seen)
