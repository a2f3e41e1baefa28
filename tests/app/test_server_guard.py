"""What the server answers beside the pages (``app.server_guard``), over HTTP against a real server.

A script posing as a browser (``tests.wire``) takes the XSRF cookie, opens the websocket and learns
its session id, as a visitor can without signing in. The server started as ``make run`` starts it
refuses such a visitor's uploads, bounds a signed-in owner's, serves a download only to the browser
session that asked for it, and does not serve Streamlit's metrics.
"""

from __future__ import annotations

import pytest

from tests.browser.test_browser import OWNER, OWNER_PASSWORD, AppServer, ensure_account
from tests.wire import WireBrowser

pytestmark = pytest.mark.processes  # a real server (a slow lane)

#: the largest upload the test server takes (--server.maxUploadSize, MB): a session may hold two
MAX_UPLOAD_MB = 1
MB = 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from app.services import MarginLab

    folder = tmp_path_factory.mktemp("guard")
    db_url = f"sqlite:///{folder / 'marginlab.db'}"
    svc = MarginLab.from_url(db_url)  # the demo dataset, and a session with a label in it to export
    dataset_id = svc.ensure_demo_dataset() or svc.datasets()[0].id
    run = svc.start_session(dataset_id=dataset_id, annotator=OWNER, strategy="random", seed=0)
    run.answer(1, item_index=run.shown.item_index)
    svc.engine.dispose()
    ensure_account(db_url, OWNER)
    ensure_account(db_url, "second-owner")
    ensure_account(db_url, "annotator-1", role="annotator")
    with AppServer(db_url, folder / "server.log", args=("--server.maxUploadSize", str(MAX_UPLOAD_MB))) as running:
        yield running


def test_a_browser_session_nobody_signed_in_to_cannot_upload(server):
    with WireBrowser(server.url) as visitor:
        page = visitor.run()
        assert "sign_in_name" in page.widgets and page.session_id
        refused = visitor.upload(b"x" * 1000)
        assert refused.status_code == 403, refused.text
        assert "Sign in" in refused.text


def test_an_annotator_cannot_upload_and_an_owner_within_a_budget(server):
    with WireBrowser(server.url) as annotator:
        annotator.sign_in("annotator-1", OWNER_PASSWORD)
        assert annotator.upload(b"x" * 1000).status_code == 403  # no page of an annotator takes files
    with WireBrowser(server.url) as owner, WireBrowser(server.url) as visitor:
        owner.sign_in(OWNER, OWNER_PASSWORD)
        visitor.run()
        # the id of the owner's browser session does not help another browser: it is not signed in there
        assert visitor.upload(b"x" * 1000, session_id=owner.session_id).status_code == 403
        file = b"0," * (MB * 9 // 20)  # 0.9 MB: two fit in the budget of two of the largest files
        assert owner.upload(file).status_code == 204
        assert owner.upload(file).status_code == 204
        over = owner.upload(file)
        assert over.status_code == 413, over.text
        assert "2 MB" in over.text
        # a file larger than the server takes is refused as before
        assert owner.upload(b"0" * (MAX_UPLOAD_MB * MB + 1)).status_code == 413


def test_the_server_does_not_serve_its_metrics(server):
    with WireBrowser(server.url) as visitor:
        visitor.run()
        answer = visitor.get("/_stcore/metrics")
        assert answer.status_code == 404
        assert "cache" not in answer.text.lower()
    with WireBrowser(server.url) as owner:
        owner.sign_in(OWNER, OWNER_PASSWORD)
        assert owner.get("/_stcore/metrics").status_code == 404


def test_a_download_is_served_only_to_the_browser_session_that_asked_for_it(server):
    owner = WireBrowser(server.url)
    try:
        owner.sign_in(OWNER, OWNER_PASSWORD)
        export = owner.run(page="export")
        url = owner.download(export.widgets["download_csv"])
        assert url.startswith("/media/") and url.endswith(".csv"), url
        got = owner.get(url)
        assert got.status_code == 200 and ",item_index," in got.text.splitlines()[0], got.text[:200]
        with WireBrowser(server.url) as visitor:  # someone without a sign-in, the address in hand
            visitor.run()
            assert visitor.get(url).status_code == 404
        with WireBrowser(server.url) as colleague:  # someone signed in, in another browser
            colleague.sign_in("second-owner", OWNER_PASSWORD)
            assert colleague.get(url).status_code == 404
        import requests

        assert requests.get(f"{server.url}{url}", timeout=30).status_code == 404  # no cookie at all
    finally:
        owner.close()
    # the owner's browser closed: the file is not served any more, even with the owner's cookie
    assert owner.get(url).status_code == 404


# --------------------------------------------------------------------------- the pieces, without a server


class FakeRuntime:
    """What the guard asks of Streamlit's runtime: which sessions are open, the upload and media managers."""

    def __init__(self):
        from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

        self.active: set[str] = set()
        self.uploaded_file_mgr = MemoryUploadedFileManager("/_stcore/upload_file")
        self.media_file_mgr = type("Media", (), {"execute_deferred": lambda self, placeholder: ""})()

    def is_active_session(self, session_id: str) -> bool:
        return session_id in self.active


def test_the_uploads_of_a_session_go_when_its_connection_ends():
    from streamlit.runtime.uploaded_file_manager import UploadedFileRec

    from app.server_guard import Guard

    runtime = FakeRuntime()
    runtime.active = {"a", "b"}
    guard = Guard(app=None, runtime=runtime)
    for session in ("a", "b"):
        runtime.uploaded_file_mgr.add_file(session, UploadedFileRec("f", "x.csv", "text/csv", b"x" * 1000))
        guard.uploads.start(session, "f", 1000)
    runtime.active.discard("a")  # a's websocket closed
    guard.forget_ended_sessions()
    assert runtime.uploaded_file_mgr.get_files("a", ["f"]) == []
    assert len(runtime.uploaded_file_mgr.get_files("b", ["f"])) == 1
    assert guard.uploads.sessions() == ["b"]


def test_uploads_in_flight_at_once_count_together():
    from app.server_guard import Refused, Uploads

    uploads = Uploads(budget=1000)
    uploads.start("s", "f1", None)
    uploads.start("s", "f2", None)
    uploads.grow("s", "f1", 600)
    with pytest.raises(Refused) as refused:
        uploads.grow("s", "f2", 600)  # neither has finished: together they are over
    assert refused.value.status == 413
    uploads.grow("s", "f1", 400)  # what the refused file had counted is not held
    uploads.start("t", "f", 1000)  # another session has its own budget


def test_a_download_expires():
    from app.server_guard import Downloads

    now = [100.0]
    downloads = Downloads(seconds=60, clock=lambda: now[0])
    downloads.note("abc", "session-1")
    assert downloads.asked_by("abc") == {"session-1"}
    now[0] += 59
    assert downloads.asked_by("abc") == {"session-1"}
    now[0] += 1
    assert downloads.asked_by("abc") == set()
    assert downloads.made == {}


def test_the_guard_is_put_around_the_application_streamlit_builds(monkeypatch):
    from streamlit.web.server.starlette import starlette_server

    from app import server_guard

    built = []
    monkeypatch.setattr(starlette_server, "create_starlette_app", lambda runtime: built.append(runtime) or "app")
    server_guard.install()
    server_guard.install()  # twice: still one guard
    runtime = FakeRuntime()
    app = starlette_server.create_starlette_app(runtime)
    assert isinstance(app, server_guard.Guard) and app.app == "app" and built == [runtime]


def test_a_server_shared_without_the_guard_is_told_to_owners(monkeypatch):
    from streamlit.web.server.starlette import starlette_server

    from app import server_guard

    # the application builder as a bare `streamlit run` has it (another test may have guarded this process's)
    monkeypatch.setattr(starlette_server, "create_starlette_app", lambda runtime: None)
    assert not server_guard.installed()
    # a bare `streamlit run` on every interface or on a network address, reached by a browser: told
    assert server_guard.unguarded_on_a_network(None, served_to_a_browser=True)
    assert server_guard.unguarded_on_a_network("0.0.0.0", served_to_a_browser=True)
    assert server_guard.unguarded_on_a_network("192.168.1.20", served_to_a_browser=True)
    # this machine only, or no browser (a test harness): nothing to tell
    for address in ("127.0.0.1", "localhost", "::1", "[::1]"):
        assert not server_guard.unguarded_on_a_network(address, served_to_a_browser=True)
    assert not server_guard.unguarded_on_a_network("0.0.0.0", served_to_a_browser=False)
    server_guard.install()  # what app.serve does: guarded, nothing to tell wherever it listens
    assert server_guard.installed()
    assert not server_guard.unguarded_on_a_network("0.0.0.0", served_to_a_browser=True)
