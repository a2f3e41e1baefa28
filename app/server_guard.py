"""What the server answers beside the pages: uploaded files, downloads, its metrics.

Streamlit serves three things over plain HTTP beside the pages' websocket, and by itself serves
them to anyone who can reach the server. ``install`` wraps the application Streamlit builds
(``app.serve`` hooks it in before the server listens) so that:

- ``PUT /_stcore/upload_file/<session>/<file>`` (a file for a file uploader, held in memory for
  the browser session) is accepted only for a browser session signed in as an owner (the pages that
  take files are the owners'), before any of its body is read; a browser session holds at most
  ``upload_budget()`` bytes of uploads at a time, and they are dropped when its connection ends;
- ``GET /media/<file>`` (the pictures of a page and the files of the download buttons) is served
  only to a browser with a signed-in session open; the file of a download button only to the
  browser whose session asked for it, for ``DOWNLOAD_SECONDS`` after it was made;
- ``/_stcore/metrics`` (Streamlit's counters, with the names of its caches) is not served.

- ``POST /_marginlab/browser-sign-in`` (``SIGN_IN_PATH``) takes the one-time ticket a page that has
  just been signed in hands over (in the body, never in an address) and answers with the browser's
  sign-in cookie (``SIGN_IN_COOKIE``: HttpOnly, SameSite=Strict, Secure when the page is on https; see
  ``app.auth``); ``POST /_marginlab/browser-sign-out`` (``SIGN_OUT_PATH``) answers with that cookie
  removed. Both only to a request from a page of this server (its ``Origin`` names the host the request
  was sent to; a browser's ``Sec-Fetch-Site`` says ``same-origin`` where it sends one).

The pages say who is signed in in each browser session (``note_signed_in`` / ``note_signed_out``,
from ``app/main.py``); a browser is known by the token of its XSRF cookie (random, set by the
server, sent by the browser with every request to it and with its websocket).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

#: seconds during which the file of a download button can be fetched after it was made (the browser
#: fetches it at once; a link copied elsewhere finds nothing afterwards)
DOWNLOAD_SECONDS = 60.0
#: the cookie of Streamlit's XSRF token (one per browser, set by the server)
XSRF_COOKIE = "_streamlit_xsrf"
#: uploads a browser session may hold at once, in files of the largest size the server accepts
#: (``server.maxUploadSize``): the file shown and the one replacing it
UPLOADS_PER_SESSION = 2

#: the cookie that keeps a browser's sign-in: a random token, of which the database holds only the hash
SIGN_IN_COOKIE = "marginlab_signin"
#: where a signed-in page exchanges its one-time ticket for the cookie, and where it has the cookie removed
SIGN_IN_PATH = "/_marginlab/browser-sign-in"
SIGN_OUT_PATH = "/_marginlab/browser-sign-out"
#: the largest body the sign-in endpoint reads (a ticket is 43 characters)
_TICKET_BODY_LIMIT = 1024

_UPLOAD = re.compile(r"^/_stcore/upload_file/(?P<session>[^/]+)/(?P<file>[^/]+)$")
_MEDIA = re.compile(r"^/media/(?P<file>[^/]+)$")
_METRICS = "/_stcore/metrics"


@dataclass(frozen=True)
class SignedIn:
    """A browser session with someone signed in."""

    name: str
    is_owner: bool
    browser: bytes | None  # its browser's XSRF token (None: no cookie came with its websocket)


_lock = threading.Lock()
_signed_in: dict[str, SignedIn] = {}  # Streamlit session id -> who is signed in there


def browser_token(cookie: str | None) -> bytes | None:
    """The token an XSRF cookie carries (the cookie's text changes with every response; its token does not)."""
    if not cookie:
        return None
    from streamlit.web.server.starlette.starlette_app_utils import decode_xsrf_token_string

    token, _ = decode_xsrf_token_string(cookie)
    return token or None


def note_signed_in(who) -> None:
    """The page run in this browser session found ``who`` signed in (an ``Identity``)."""
    import streamlit as st
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return
    try:
        cookie = st.context.cookies.get(XSRF_COOKIE)
    except Exception:  # noqa: BLE001 - no client context (a test harness without a browser)
        cookie = None
    with _lock:
        _signed_in[ctx.session_id] = SignedIn(who.name, bool(who.is_owner), browser_token(cookie))


def note_signed_out() -> None:
    """Nobody is signed in in this browser session (any more)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is not None:
        with _lock:
            _signed_in.pop(ctx.session_id, None)


def signed_in(session_id: str) -> SignedIn | None:
    with _lock:
        return _signed_in.get(session_id)


def upload_budget() -> int:
    """Bytes of uploads a browser session may hold at once."""
    from streamlit import config

    return UPLOADS_PER_SESSION * int(config.get_option("server.maxUploadSize")) * 1024 * 1024


def _megabytes(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MB"


class Refused(Exception):
    """A request the guard answers itself, with ``status`` and a plain-text ``message``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Uploads:
    """The bytes of uploads each browser session holds (counted as they arrive, so that uploads in
    flight at the same time count together)."""

    budget: int
    held: dict[str, dict[str, int]] = field(default_factory=dict)  # session -> file -> bytes
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, session: str, file: str, announced: int | None) -> None:
        """A new upload of ``file`` (it replaces a file of the same id); refused at once when its
        announced length goes over the budget."""
        with self.lock:
            files = self.held.setdefault(session, {})
            files[file] = 0
            if announced is not None and sum(files.values()) + announced > self.budget:
                del files[file]
                raise self._over()

    def grow(self, session: str, file: str, n: int) -> None:
        with self.lock:
            files = self.held.setdefault(session, {})
            files[file] = files.get(file, 0) + n
            if sum(files.values()) > self.budget:
                del files[file]
                raise self._over()

    def _over(self) -> Refused:
        return Refused(
            413,
            f"A browser session may hold {_megabytes(self.budget)} of uploaded files at once; "
            "remove a file before adding another.",
        )

    def drop(self, session: str, file: str) -> None:
        with self.lock:
            files = self.held.get(session)
            if files is not None:
                files.pop(file, None)
                if not files:
                    del self.held[session]

    def drop_session(self, session: str) -> None:
        with self.lock:
            self.held.pop(session, None)

    def sessions(self) -> list[str]:
        with self.lock:
            return list(self.held)


@dataclass
class Downloads:
    """Which browser session asked for the file of a download button, and when."""

    seconds: float = DOWNLOAD_SECONDS
    clock: Callable[[], float] = time.monotonic
    made: dict[str, dict[str, float]] = field(default_factory=dict)  # file id -> session -> when
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, file_id: str, session: str) -> None:
        now = self.clock()
        with self.lock:
            self._forget_old(now)
            self.made.setdefault(file_id, {})[session] = now

    def asked_by(self, file_id: str) -> set[str]:
        """The sessions that asked for the file less than ``seconds`` ago."""
        now = self.clock()
        with self.lock:
            self._forget_old(now)
            return set(self.made.get(file_id, {}))

    def _forget_old(self, now: float) -> None:
        for file_id in list(self.made):
            sessions = {s: t for s, t in self.made[file_id].items() if now - t < self.seconds}
            if sessions:
                self.made[file_id] = sessions
            else:
                del self.made[file_id]


def _file_id(url_or_name: str) -> str:
    """The storage id of a media file from its URL or file name (``/media/<id>.<ext>``)."""
    return url_or_name.rsplit("/", 1)[-1].split(".", 1)[0]


class Guard:
    """ASGI middleware around Streamlit's application: see the module's docstring."""

    def __init__(
        self,
        app,
        runtime,
        *,
        base_path: str = "",
        downloads: Downloads | None = None,
        is_signed_in: Callable[[str], SignedIn | None] = signed_in,
        redeem_ticket: Callable[[str], object] | None = None,
    ):
        self.app = app
        #: a ticket -> the ``BrowserCookie`` for it, or None (default: the process's service)
        self.redeem_ticket = redeem_ticket or _redeem_with_the_service
        self.runtime = runtime
        self.base = "/" + base_path.strip("/") if base_path.strip("/") else ""
        self.uploads = Uploads(upload_budget())
        self.downloads = downloads or Downloads()
        self.signed_in = is_signed_in
        self._note_downloads(runtime.media_file_mgr)

    # -- who asks --------------------------------------------------------------------------------
    def _sessions_of(self, scope) -> list[str]:
        """The open, signed-in browser sessions of the browser that sent the request."""
        token = browser_token(_cookie(scope, XSRF_COOKIE))
        if token is None:
            return []
        with _lock:
            candidates = [sid for sid, who in _signed_in.items() if who.browser == token]
        return [sid for sid in candidates if self.runtime.is_active_session(sid)]

    # -- the ASGI entry ----------------------------------------------------------------------------
    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            try:
                await self.app(scope, receive, send)
            finally:  # a browser session's connection ended: what it uploaded goes
                self.forget_ended_sessions()
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = self._local_path(scope.get("path", ""))
        try:
            if path in (SIGN_IN_PATH, SIGN_OUT_PATH):
                await self._browser_sign_in(scope, receive, send, signing_in=path == SIGN_IN_PATH)
                return
            if path == _METRICS:
                raise Refused(404, "Not found")
            upload = _UPLOAD.match(path)
            if upload and scope["method"] == "PUT":
                await self._upload(scope, receive, send, upload["session"], upload["file"])
                return
            if upload and scope["method"] == "DELETE":
                await self.app(scope, receive, send)
                self.uploads.drop(upload["session"], upload["file"])
                return
            media = _MEDIA.match(path)
            if media and scope["method"] in ("GET", "HEAD"):
                self._check_media(scope, media["file"])
        except Refused as refused:
            await _answer(send, refused)
            return
        await self.app(scope, receive, send)

    def _local_path(self, path: str) -> str:
        path = re.sub(r"/{2,}", "/", path)
        if self.base and path.startswith(self.base + "/"):
            path = path[len(self.base) :]
        return path.rstrip("/") or "/"

    # -- the browser's sign-in cookie ----------------------------------------------------------------
    async def _browser_sign_in(self, scope, receive, send, *, signing_in: bool) -> None:
        """Set the sign-in cookie for a valid one-time ticket (the request's body), or remove it."""
        if scope["method"] != "POST":
            raise Refused(405, "Method not allowed")
        secure = _from_this_server(scope)
        path = self.base + "/"
        if not signing_in:
            await _respond(send, 204, headers=[(b"set-cookie", sign_in_cookie("", 0, path=path, secure=secure))])
            return
        body = await _read_body(receive, _TICKET_BODY_LIMIT)
        ticket = body.decode("ascii", "replace").strip()
        from starlette.concurrency import run_in_threadpool

        try:
            cookie = await run_in_threadpool(self.redeem_ticket, ticket)
        except Exception as error:  # noqa: BLE001 - the database could not be used: said, not raised
            logger.error("a browser sign-in could not be kept", exc_info=error)
            raise Refused(
                503, "The sign-in could not be kept by the browser: the database could not be used."
            ) from None
        if cookie is None:
            raise Refused(403, "This sign-in ticket is not valid (used, expired or unknown).")
        await _respond(
            send,
            204,
            headers=[(b"set-cookie", sign_in_cookie(cookie.token, cookie.max_age(), path=path, secure=secure))],
        )

    # -- uploads -----------------------------------------------------------------------------------
    async def _upload(self, scope, receive, send, session: str, file: str) -> None:
        who = self.signed_in(session)
        if (
            who is None
            or not who.is_owner
            or not self.runtime.is_active_session(session)
            or (who.browser is not None and browser_token(_cookie(scope, XSRF_COOKIE)) != who.browser)
        ):
            raise Refused(403, "Sign in as an owner to upload files.")
        announced = _content_length(scope)
        self.uploads.start(session, file, announced)
        status = {}

        async def counted_receive():
            message = await receive()
            if message.get("type") == "http.request":
                try:
                    self.uploads.grow(session, file, len(message.get("body", b"")))
                except Refused as refused:
                    from starlette.exceptions import HTTPException

                    raise HTTPException(refused.status, refused.message) from None
            return message

        async def noted_send(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, counted_receive, noted_send)
        finally:
            if status.get("code") not in (200, 204) or not self.runtime.is_active_session(session):
                self.uploads.drop(session, file)
        if not self.runtime.is_active_session(session):  # the session ended while its file arrived
            self.runtime.uploaded_file_mgr.remove_session_files(session)

    def forget_ended_sessions(self) -> None:
        """Drop the uploads of browser sessions whose connection ended, and forget their sign-ins."""
        manager = self.runtime.uploaded_file_mgr
        held = set(self.uploads.sessions()) | set(getattr(manager, "file_storage", {}))
        for session in held:
            if not self.runtime.is_active_session(session):
                manager.remove_session_files(session)
                self.uploads.drop_session(session)
        with _lock:
            for session in [s for s in _signed_in if not self.runtime.is_active_session(s)]:
                del _signed_in[session]

    # -- downloads and pictures --------------------------------------------------------------------
    def _note_downloads(self, media) -> None:
        """Note which session asked for each file a download button makes (Streamlit makes it when the
        button is pressed, from the function the page gave it; the session is in its record)."""
        make = media.execute_deferred
        downloads = self.downloads

        def execute_deferred(placeholder: str) -> str:
            entry = media._deferred_callables.get(placeholder) or {}
            url = make(placeholder)
            if entry.get("session_id"):
                downloads.note(_file_id(url), entry["session_id"])
            return url

        media.execute_deferred = execute_deferred

    def _check_media(self, scope, name: str) -> None:
        from streamlit.runtime.media_file_storage import MediaFileKind

        sessions = self._sessions_of(scope)
        if not sessions:
            raise Refused(404, "Not found")
        found = self.runtime.media_file_mgr.read_file(name)
        if found is not None and found.kind == MediaFileKind.DOWNLOADABLE:
            if not self.downloads.asked_by(_file_id(name)) & set(sessions):
                raise Refused(404, "Not found")


def _cookie(scope, name: str) -> str | None:
    from http.cookies import SimpleCookie

    for key, value in scope.get("headers", []):
        if key == b"cookie":
            jar = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed cookie header: no cookie
                return None
            if name in jar:
                return jar[name].value
    return None


def _content_length(scope) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _answer(send, refused: Refused) -> None:
    await _respond(send, refused.status, refused.message.encode())


async def _respond(send, status: int, body: bytes = b"", headers: list[tuple[bytes, bytes]] = ()) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"cache-control", b"no-store"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive, limit: int) -> bytes:
    """The request's body; ``Refused`` (413) past ``limit`` bytes."""
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Refused(400, "The request ended before its body.")
        body += message.get("body", b"")
        if len(body) > limit:
            raise Refused(413, "Too large")
        if not message.get("more_body"):
            return body


def _headers(scope) -> dict[str, str]:
    return {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope.get("headers", [])}


def _from_this_server(scope) -> bool:
    """Whether the request came from a page of this server (else ``Refused``, 403): its ``Origin`` names the
    host it was sent to (``Host``, or the ``X-Forwarded-Host`` of a reverse proxy), and ``Sec-Fetch-Site``,
    where the browser sends it, says ``same-origin``. Returns whether that page is on https (the cookie is
    then sent over https only)."""
    headers = _headers(scope)
    refused = Refused(403, "Only a page of this server may ask for this.")
    if headers.get("sec-fetch-site", "same-origin") != "same-origin":
        raise refused
    origin = urlsplit(headers.get("origin", ""))
    if origin.scheme not in ("http", "https") or not origin.netloc:
        raise refused
    hosts = {headers.get("host", ""), headers.get("x-forwarded-host", "").split(",")[-1].strip()}
    if origin.netloc.lower() not in {host.lower() for host in hosts if host}:
        raise refused
    return origin.scheme == "https" or scope.get("scheme") == "https"


def sign_in_cookie(token: str, max_age: int, *, path: str = "/", secure: bool = False) -> bytes:
    """The ``Set-Cookie`` value of the browser's sign-in: script cannot read it (HttpOnly), no other site's
    page or link sends it (SameSite=Strict), and over https only when the page is on https."""
    parts = [f"{SIGN_IN_COOKIE}={token}", f"Path={path}", f"Max-Age={int(max_age)}", "HttpOnly", "SameSite=Strict"]
    if secure:
        parts.append("Secure")
    return "; ".join(parts).encode("latin-1")


def _redeem_with_the_service(ticket: str):
    from app.ui.state import process_service

    return process_service().redeem_browser_ticket(ticket)


def install() -> None:
    """Put the guard around every application Streamlit builds from now on in this process (before
    ``streamlit run`` starts its server)."""
    from streamlit import config
    from streamlit.web.server.starlette import starlette_server

    build = starlette_server.create_starlette_app
    if getattr(build, "guarded", False):
        return

    def create_starlette_app(runtime):
        return Guard(build(runtime), runtime, base_path=config.get_option("server.baseUrlPath") or "")

    create_starlette_app.guarded = True
    starlette_server.create_starlette_app = create_starlette_app


#: addresses that only this machine reaches
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def installed() -> bool:
    """Whether this process's server is guarded (started by ``app.serve``, not ``streamlit run``)."""
    from streamlit.web.server.starlette import starlette_server

    return bool(getattr(starlette_server.create_starlette_app, "guarded", False))


def unguarded_on_a_network(address: str | None, served_to_a_browser: bool) -> bool:
    """Whether a server others can reach serves uploads and downloads without the guard: ``address`` is the
    server's ``server.address`` (None: Streamlit listens on every interface), ``served_to_a_browser`` whether
    a real browser asked (a test harness has no server to reach)."""
    if installed() or not served_to_a_browser:
        return False
    return address is None or address.strip("[]") not in LOOPBACK
