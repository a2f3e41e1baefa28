"""The pages and their addresses: every page has a stable address that can be bookmarked.

Owners: ``/data``, ``/label``, ``/history``, ``/sessions``, ``/team_label``,
``/projects``, ``/compare``, ``/export``, ``/team``, ``/my_labels``; annotators:
``/team_label`` and ``/my_labels``. The root ``/`` opens the role's first page,
Label for owners (with the same query, so ``/?session=3`` works too) and Label
together for annotators; an owner's page's address opens an annotator's first page too (a link
an owner shared, opened in a browser that keeps an annotator's sign-in). The labelling session is in the address
(``?session=N``), so a link or a bookmark reopens it.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

VIEWS = Path(__file__).resolve().parent / "views"

#: url path (= file name in views/) -> (title in the menu, icon), in menu order
PAGES = {
    "data": ("Data", ":material/table_view:"),
    "label": ("Label", ":material/label:"),
    "history": ("History", ":material/history:"),
    "sessions": ("Sessions", ":material/folder_open:"),
    "team_label": ("Label together", ":material/groups:"),
    "projects": ("Projects", ":material/workspaces:"),
    "compare": ("Compare", ":material/compare_arrows:"),
    "export": ("Export", ":material/download:"),
    "team": ("Team", ":material/manage_accounts:"),
    "my_labels": ("My labels", ":material/person:"),
}
#: the pages an annotator sees (label in their projects, their own answers); owners see every page
ANNOTATOR_PAGES = ("team_label", "my_labels")
#: the query parameter that names the labelling session
SESSION_PARAM = "session"


def view(name: str) -> Path:
    """The file of a page, for ``st.page_link`` and ``st.switch_page``."""
    return VIEWS / f"{name}.py"


def pages(is_owner: bool = True) -> list:
    """The pages of a role for ``st.navigation``: each at its own address, and a hidden root that
    opens the role's first page (Label for owners, keeping the query: ``/?session=3`` opens session 3);
    for an annotator, the owners' pages' addresses are hidden pages that open it too (rather than
    Streamlit's "Page not found")."""
    names = [name for name in PAGES if is_owner or name in ANNOTATOR_PAGES]
    made = [st.Page(view(name), title=PAGES[name][0], icon=PAGES[name][1], url_path=name) for name in names]
    first = "label" if is_owner else names[0]

    def home() -> None:
        st.switch_page(view(first), query_params=st.query_params.to_dict())

    root = st.Page(home, title="MarginLab", url_path="", default=True, visibility="hidden")
    elsewhere = [
        st.Page(home, title=PAGES[name][0], url_path=name, visibility="hidden") for name in PAGES if name not in names
    ]
    return [root, *made, *elsewhere]


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
