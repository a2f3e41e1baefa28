"""A browser session without a browser: Streamlit's websocket protocol, as the page's script speaks it.

Enough to do over HTTP what a visitor's browser (or a script posing as one) does: take the XSRF
cookie, open the websocket and learn the session id, run a page with widget values (sign in, press a
button), ask for the file of a download button, and send files to the upload endpoint.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from dataclasses import dataclass, field

import requests
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import connect

XSRF_COOKIE = "_streamlit_xsrf"
#: how a run of the whole page ends (a fragment's rerun, or a run cut short for a rerun, ends otherwise)
WHOLE_RUN_ENDS = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR)


@dataclass
class Page:
    """What one run of the script sent: the session's id, widgets by key, texts of alerts and Markdown."""

    session_id: str | None = None
    widgets: dict[str, object] = field(default_factory=dict)  # key -> the widget's proto (id, label, ...)
    texts: list[str] = field(default_factory=list)


class WireBrowser:
    """One browser (one XSRF cookie) with one browser session (one websocket)."""

    def __init__(self, url: str, timeout: float = 120.0, cookies: dict[str, str] | None = None):
        """``cookies``: more cookies the browser holds (sent with its websocket and its requests)."""
        self.url = url
        self.timeout = timeout
        self.http = requests.Session()
        self.http.get(f"{url}/_stcore/health", timeout=timeout).raise_for_status()
        self.xsrf = self.http.cookies[XSRF_COOKIE]
        held = {XSRF_COOKIE: self.xsrf, **(cookies or {})}
        self.http.cookies.update(cookies or {})
        self._open = contextlib.ExitStack()
        self.ws = self._open.enter_context(
            connect(
                url.replace("http://", "ws://") + "/_stcore/stream",
                subprotocols=["streamlit", self.xsrf],
                additional_headers={"Cookie": "; ".join(f"{k}={v}" for k, v in held.items()), "Origin": url},
                open_timeout=timeout,
                max_size=None,
            )
        )
        self.session_id: str | None = None
        self._requests = itertools.count(1)

    def run(self, page: str = "", widgets: tuple = ()) -> Page:
        """Run the script on ``page`` with ``widgets`` ((id, field, value) triples), until it finishes."""
        message = BackMsg()
        message.rerun_script.query_string = ""
        message.rerun_script.page_name = page
        for widget_id, name, value in widgets:
            state = message.rerun_script.widget_states.widgets.add()
            state.id = widget_id
            setattr(state, name, value)
        self.ws.send(message.SerializeToString())
        shown = Page()
        while True:
            reply = self._receive()
            kind = reply.WhichOneof("type")
            if kind == "new_session":  # a run of the whole page begins: what it shows is what counts
                shown = Page()
                shown.session_id = self.session_id = reply.new_session.initialize.session_id
            elif kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
                element = reply.delta.new_element
                proto = getattr(element, element.WhichOneof("type"))
                widget_id = getattr(proto, "id", "")
                if widget_id:
                    shown.widgets[widget_id.rsplit("-", 1)[-1]] = proto
                if hasattr(proto, "body"):
                    shown.texts.append(proto.body)
            elif kind == "script_finished" and reply.script_finished in WHOLE_RUN_ENDS:
                # (not a fragment's own rerun, such as the first start's progress notice, nor a run cut short
                # by a rerun: the run of the whole page that follows is the one asked for)
                return shown

    def sign_in(self, name: str, password: str) -> Page:
        form = self.run().widgets
        page = self.run(
            widgets=(
                (form["sign_in_name"].id, "string_value", name),
                (form["sign_in_password"].id, "string_value", password),
                (form["sign_in_submit"].id, "trigger_value", True),
            )
        )
        assert any(text.startswith("Signed in as **") for text in page.texts), page.texts
        return page

    def download(self, button) -> str:
        """Press a download button: the address of the file the server made for it."""
        message = BackMsg()
        request = message.backend_operation_request
        request.request_id = str(next(self._requests))
        request.session_id = self.session_id
        request.deferred_file.file_id = button.deferred_file_id
        self.ws.send(message.SerializeToString())
        while True:
            reply = self._receive()
            if reply.WhichOneof("type") == "backend_operation_response":
                response = reply.backend_operation_response
                assert not response.error_msg, response.error_msg
                return response.deferred_file.url

    def upload(self, data: bytes, name: str = "file.csv", session_id: str | None = None) -> requests.Response:
        """PUT a file to the upload endpoint for this browser session (or another one's id)."""
        target = session_id or self.session_id
        return self.http.put(
            f"{self.url}/_stcore/upload_file/{target}/{uuid.uuid4()}",
            files={"file": (name, data, "text/csv")},
            headers={"X-Xsrftoken": self.xsrf},
            timeout=self.timeout,
        )

    def get(self, path: str) -> requests.Response:
        return self.http.get(f"{self.url}{path}", timeout=self.timeout)

    def _receive(self) -> ForwardMsg:
        reply = ForwardMsg()
        reply.ParseFromString(self.ws.recv(timeout=self.timeout))
        return reply

    def close(self) -> None:
        self._open.close()

    def __enter__(self) -> WireBrowser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
