"""A tab left open across a server restart loads its page from the new server by itself (``app.reconnect``).

In a real browser (Debian's Chromium, headless) on the server as ``make run`` starts it: a tab showing
the Label page, the server stopped, answers given meanwhile, a new server on the same address: the tab,
untouched, shows what the new server draws for its address. A reconnect to the same server keeps the
page and its sign-in. The middleware itself (the page's script, the server's start id) without a server.
"""

from __future__ import annotations

import asyncio
import gzip

import pytest

from tests.browser.test_browser import (
    OWNER,
    AppServer,
    ensure_account,
    free_port,
    go_to,
    goto,
    launch_browser,
    progress_labels,
    wait_for_app,
)

#: the page's sockets, kept where the test can reach them (added before any script of the page runs)
KEEP_SOCKETS = """(() => {
  const Native = window.WebSocket;
  window.testSockets = [];
  function Kept(url, protocols) {
    const socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
    window.testSockets.push(socket);
    return socket;
  }
  Kept.prototype = Native.prototype;
  for (const name of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Kept[name] = Native[name];
  window.WebSocket = Kept;
})();"""

#: what the new server draws for the tab's address: the sign-in page (a sign-in that did not outlast
#: the restart), or the Label page with the answers given while the server was down
FRESH = """(answers) => {
  const signIn = [...document.querySelectorAll("button")].some((b) => b.innerText.trim() === "Sign in");
  const progress = document.querySelector(".st-key-progress");
  return signIn || (progress !== null && new RegExp("\\\\b" + answers + "\\\\s+labels").test(progress.innerText));
}"""


def labelling_session(db_url: str) -> int:
    """A session of the owner on the demo digits, nothing answered yet."""
    from app.services import MarginLab

    svc = MarginLab.from_url(db_url)
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    session_id = svc.start_session(dataset_id=dataset_id, annotator=OWNER, strategy="random", seed=0).session_id
    svc.engine.dispose()
    ensure_account(db_url, OWNER)
    return session_id


def answer(db_url: str, session_id: int, n: int) -> None:
    """``n`` answers to the session, given as another tab would give them."""
    from app.services import MarginLab

    svc = MarginLab.from_url(db_url)
    run = svc.open_session(session_id)
    for _ in range(n):
        item = run.shown.item_index
        assert run.answer(int(run.y_true[item]), item_index=item).ok
    svc.engine.dispose()


@pytest.mark.browser
def test_a_tab_left_open_across_a_restart_shows_the_new_servers_page_without_a_click(tmp_path):
    from playwright.sync_api import sync_playwright

    db_url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    session_id = labelling_session(db_url)
    port = free_port()
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(db_url, tmp_path / "server1.log", port=port) as server:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                address = f"{server.url}/label?session={session_id}"
                goto(page, address)
                page.wait_for_selector(".st-key-progress", timeout=60_000)
                assert progress_labels(page) == 0
                page.evaluate("window.drawnBefore = true")
            answer(db_url, session_id, 2)  # while the server is down
            with AppServer(db_url, tmp_path / "server2.log", port=port):
                # no click, no key: the tab finds the new server and shows what it draws
                page.wait_for_function(FRESH, arg=2, timeout=90_000)
                wait_for_app(page)
                assert page.evaluate("window.drawnBefore") is None  # a page drawn afresh
                assert page.url == address  # at the address it had
        finally:
            browser.close()


@pytest.mark.browser
def test_a_reconnect_to_the_same_server_keeps_the_page_and_its_sign_in(tmp_path):
    from playwright.sync_api import sync_playwright

    db_url = f"sqlite:///{tmp_path / 'marginlab.db'}"
    session_id = labelling_session(db_url)
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        try:
            with AppServer(db_url, tmp_path / "server.log") as server:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.add_init_script(KEEP_SOCKETS)
                goto(page, f"{server.url}/label?session={session_id}")
                page.wait_for_selector(".st-key-progress", timeout=60_000)
                page.evaluate("window.drawnBefore = true")
                # the connection drops; the page connects again and asks the server when it started
                with page.expect_response(lambda r: r.url.endswith("/_marginlab/started"), timeout=60_000):
                    page.evaluate("window.testSockets[window.testSockets.length - 1].close()")
                assert page.evaluate("window.testSockets.length") == 2
                go_to(page, "History")  # the browser session goes on, signed in
                assert page.evaluate("window.drawnBefore") is True  # the page was not loaded again
        finally:
            browser.close()


# --------------------------------------------------------------------------- the middleware, without a server


def call(app, path: str, method: str = "GET") -> tuple[dict, bytes]:
    """The start message and the whole body ``app`` answers to a request for ``path``."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app({"type": "http", "method": method, "path": path, "headers": []}, receive, send))
    return sent[0], b"".join(m.get("body", b"") for m in sent[1:])


def streamlit_like(body: bytes, content_type: bytes = b"text/html", encoding: bytes | None = None):
    """An application answering every request with ``body`` in two pieces."""

    async def app(scope, receive, send):
        headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
        if encoding:
            headers.append((b"content-encoding", encoding))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        half = len(body) // 2
        await send({"type": "http.response.body", "body": body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": body[half:]})

    return app


PAGE = b"<!DOCTYPE html><html><head><title>MarginLab</title></head><body><div id='root'></div></body></html>"


def test_every_html_page_carries_the_script_whole_and_uncompressed():
    from app.reconnect import SCRIPT, Reconnect

    for encoding, body in ((None, PAGE), (b"gzip", gzip.compress(PAGE))):
        start, sent = call(Reconnect(streamlit_like(body, encoding=encoding)), "/label")
        headers = dict(start["headers"])
        assert sent == PAGE.replace(b"</head>", SCRIPT.encode() + b"</head>")
        assert int(headers[b"content-length"]) == len(sent) and b"content-encoding" not in headers
    # what is not a page passes as it came
    for body, content_type in ((b"console.log(1)", b"text/javascript"), (b"ok", b"text/plain")):
        start, sent = call(Reconnect(streamlit_like(body, content_type)), "/static/js/x.js")
        assert sent == body and dict(start["headers"])[b"content-length"] == str(len(body)).encode()


def test_the_server_says_when_it_started_at_its_base_path():
    from app import reconnect

    def never(scope, receive, send):
        raise AssertionError("answered by the middleware, not by Streamlit")

    for base, path in (("", "/_marginlab/started"), ("/lab/", "/lab/_marginlab/started")):
        start, sent = call(reconnect.Reconnect(never, base_path=base), path)
        assert start["status"] == 200 and sent == reconnect.STARTED.encode()
        assert dict(start["headers"])[b"cache-control"] == b"no-store"
    assert len(reconnect.STARTED) == 16


def test_reconnect_is_put_around_the_guarded_application(monkeypatch):
    from streamlit.web.server.starlette import starlette_server

    from app import reconnect, server_guard
    from tests.app.test_server_guard import FakeRuntime

    built = []
    monkeypatch.setattr(starlette_server, "create_starlette_app", lambda runtime: built.append(runtime) or "app")
    server_guard.install()
    reconnect.install()
    reconnect.install()  # twice: still one
    server_guard.install()  # the guard sees itself installed
    runtime = FakeRuntime()
    app = starlette_server.create_starlette_app(runtime)
    assert isinstance(app, reconnect.Reconnect) and isinstance(app.app, server_guard.Guard)
    assert app.app.app == "app" and built == [runtime]
