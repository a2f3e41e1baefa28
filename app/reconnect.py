"""A tab left open across a server restart loads its page from the new server by itself.

Streamlit's page reconnects its websocket when the server is back (within a few seconds: it retries
at most 4 s apart), but the new server knows nothing of the tab's session: it opens a new, empty one,
and the page, which asks for a script run on reconnecting only when it has no session yet, goes on
showing what the old server drew until someone clicks. ``install`` wraps the application Streamlit
builds (``app.serve`` hooks it in before the server listens) so that:

- ``GET /_marginlab/started`` answers an id drawn when the server started (``STARTED``; random,
  the same for every request to one server process);
- every HTML page the server sends (Streamlit's ``index.html``, at every page address) carries
  ``SCRIPT``: whenever the page's websocket to ``/_stcore/stream`` opens, it asks for that id; when it
  differs from the one the page met first, the server was restarted under the page and the page loads
  itself again (its address kept), as a reload by hand would: the new server draws it afresh, and the
  browser takes the new server's frontend code with it.

A reconnect to the same server (a network blip) keeps the page and its browser session as Streamlit
keeps them. (Streamlit keeps a disconnected browser session for 2 minutes: a tab that comes back to the
same server later meets a new session and, as before, shows its old page until clicked.) The id says
that a server started, and nothing else.
"""

from __future__ import annotations

import gzip
import re
import secrets
from functools import wraps

#: the address (below the server's base path) that answers ``STARTED``
STARTED_PATH = "/_marginlab/started"
#: drawn once per server process
STARTED = secrets.token_hex(8)

#: put into every HTML page the server sends, before ``</head>`` (it runs before Streamlit's own code,
#: which is a module script, and so sees every websocket the page opens)
SCRIPT = """<script>
(() => {
  const Native = window.WebSocket;
  let first = null;
  function Watched(url, protocols) {
    const socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
    const http = String(url).replace(/^ws/, "http");
    const started = http.replace(/\\/_stcore\\/stream$/, "STARTED_PATH");
    if (started !== http) {
      socket.addEventListener("open", () => {
        fetch(started, {cache: "no-store"}).then((r) => (r.ok ? r.text() : null)).then((id) => {
          if (!id) return;
          if (first === null) first = id;
          else if (id !== first) window.location.reload();
        }).catch(() => {});
      });
    }
    return socket;
  }
  Watched.prototype = Native.prototype;
  for (const name of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Watched[name] = Native[name];
  window.WebSocket = Watched;
})();
</script>""".replace("STARTED_PATH", STARTED_PATH)


def with_script(html: bytes) -> bytes:
    """``html`` with ``SCRIPT`` before its ``</head>`` (unchanged when it has none)."""
    return re.sub(rb"</head>", SCRIPT.encode() + b"</head>", html, count=1, flags=re.IGNORECASE)


class Reconnect:
    """ASGI middleware around Streamlit's application: see the module's docstring."""

    def __init__(self, app, *, base_path: str = ""):
        self.app = app
        self.base = "/" + base_path.strip("/") if base_path.strip("/") else ""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        if self._local_path(scope.get("path", "")) == STARTED_PATH:
            body = STARTED.encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode()),
                        (b"cache-control", b"no-store"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, _ScriptAdded(send))

    def _local_path(self, path: str) -> str:
        path = re.sub(r"/{2,}", "/", path)
        if self.base and path.startswith(self.base + "/"):
            path = path[len(self.base) :]
        return path.rstrip("/") or "/"


class _ScriptAdded:
    """The ``send`` of one response: an HTML page is held until its last piece, then sent whole with
    ``SCRIPT`` in it (uncompressed; Streamlit gzips the pages at some addresses); anything else passes."""

    def __init__(self, send):
        self.send = send
        self.start: dict | None = None
        self.body: list[bytes] = []

    async def __call__(self, message):
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers", []))
            encoding = headers.get(b"content-encoding", b"identity").lower()
            if (
                message["status"] == 200
                and headers.get(b"content-type", b"").startswith(b"text/html")
                and encoding in (b"identity", b"gzip")
            ):
                self.start = message
                return
        elif message["type"] == "http.response.body" and self.start is not None:
            self.body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await self._send_page()
            return
        await self.send(message)

    async def _send_page(self) -> None:
        html = b"".join(self.body)
        headers = [(k, v) for k, v in self.start.get("headers", []) if k.lower() != b"content-length"]
        if dict(headers).get(b"content-encoding", b"identity").lower() == b"gzip":
            html = gzip.decompress(html)
            headers = [(k, v) for k, v in headers if k.lower() != b"content-encoding"]
        html = with_script(html)
        headers.append((b"content-length", str(len(html)).encode()))
        await self.send({**self.start, "headers": headers})
        await self.send({"type": "http.response.body", "body": html})


def install() -> None:
    """Put ``Reconnect`` around every application Streamlit builds from now on in this process (before
    ``streamlit run`` starts its server; with ``app.server_guard``'s guard, around it)."""
    from streamlit import config
    from streamlit.web.server.starlette import starlette_server

    build = starlette_server.create_starlette_app
    if getattr(build, "reconnect", False):
        return

    @wraps(build)  # (keeps what the function carries: app.server_guard's mark that it is guarded)
    def create_starlette_app(runtime):
        return Reconnect(build(runtime), base_path=config.get_option("server.baseUrlPath") or "")

    create_starlette_app.reconnect = True
    starlette_server.create_starlette_app = create_starlette_app
