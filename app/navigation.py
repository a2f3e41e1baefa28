"""The pages and their addresses: every page has a stable address that can be bookmarked.

``/data``, ``/label``, ``/history``, ``/sessions``, ``/compare``, ``/export``; the
root ``/`` opens the Label page (with the same query, so ``/?session=3`` works
too). The labelling session is in the address (``?session=N``), so a link or a
bookmark reopens it.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

VIEWS = Path(__file__).resolve().parent / "views"

#: url path -> (title in the menu, icon), in menu order
PAGES = {
    "data": ("Data", ":material/table_view:"),
    "label": ("Label", ":material/label:"),
    "history": ("History", ":material/history:"),
    "sessions": ("Sessions", ":material/folder_open:"),
    "compare": ("Compare", ":material/compare_arrows:"),
    "export": ("Export", ":material/download:"),
}
#: the query parameter that names the labelling session
SESSION_PARAM = "session"


def view(name: str) -> Path:
    """The file of a page, for ``st.page_link`` and ``st.switch_page``."""
    return VIEWS / f"{name}.py"


def _home() -> None:
    """``/``: the Label page, keeping the query (``/?session=3`` opens session 3)."""
    st.switch_page(view("label"), query_params=st.query_params.to_dict())


def pages() -> list:
    """The pages for ``st.navigation``: each at its own address, and a hidden root that opens Label."""
    made = [st.Page(view(name), title=title, icon=icon, url_path=name) for name, (title, icon) in PAGES.items()]
    root = st.Page(_home, title="MarginLab", url_path="", default=True, visibility="hidden")
    return [root, *made]


def session_in_address() -> int | None:
    """The session the address names (``?session=N``), or None (absent or not a number)."""
    value = st.query_params.get(SESSION_PARAM)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def put_session_in_address(session_id: int | None) -> None:
    """Name the session in the address (or take it out), so that the address reopens it."""
    if session_id is None:
        st.query_params.pop(SESSION_PARAM, None)
    elif st.query_params.get(SESSION_PARAM) != str(session_id):
        st.query_params[SESSION_PARAM] = str(session_id)
