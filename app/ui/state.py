"""The service singleton, the browser session's defaults, and the labelling session a page shows.

The engine lives inside one ``MarginLab`` service per process and database URL
(``st.cache_resource``); database sessions are never cached or kept in
``st.session_state``: every repository call opens and closes its own.
"""

from __future__ import annotations

import logging

import streamlit as st

from app import navigation
from app.services import MarginLab, ServiceError, startup
from app.services.database import database_url
from app.ui.messages import database_failed
from app.ui.text import plain, visible

logger = logging.getLogger(__name__)

DEFAULTS = {
    "session_id": None,  # the labelling session shown on the Label page
    "annotator": "",
    "outcome": None,  # the last Positive/Negative/Skip/Undo outcome
    "comparison_id": None,
    "start_error": None,
    "all_annotators": False,  # the session lists show every annotator's sessions, not only the current one's
}


@st.cache_resource(show_spinner="Opening the database…")
def _service_for(url: str) -> MarginLab:
    # opened while the server started (app.serve), or now
    return startup.take_prepared(url) or startup.open_service(url)


def service() -> MarginLab:
    """The process's service for ``$MARGINLAB_DATABASE_URL`` (default: SQLite in the data folder).

    A database that cannot be used (another program's file, a damaged one, a newer schema)
    gets a page that says so, and the page stops there.
    """
    try:
        return _service_for(database_url())
    except ServiceError as error:  # (DatabaseUnavailable: the database cannot be opened or used)
        logger.error("the database cannot be used", exc_info=error)
        database_failed(error)
        st.stop()


def process_service() -> MarginLab:
    """The same service as ``service``, for code outside a page run (the server's guard): errors raise."""
    return _service_for(database_url())


def session_label(sessions) -> dict[int, str]:
    """How a session is named in the lists: number, name (if any), dataset, heuristic and model in words
    (``app.services.vocabulary``), annotator."""
    from app.services.classes import session_how_labelled

    return {
        s.id: visible(
            f"#{s.id} · "
            + (f"{s.name} · " if s.name else "")
            + f"{s.dataset_name} · {session_how_labelled(s)} · {s.annotator}"
        )
        for s in sessions
    }


def annotator_filter(sessions, *, key: str = "all_annotators") -> list:
    """The sessions of the current annotator (and the one shown), or all of them when the toggle says so.

    The current annotator is the one who started a session in this browser tab, else the annotator of the
    session shown. The toggle appears when more than one annotator has sessions.
    """
    state = st.session_state
    by_id = {s.id: s for s in sessions}
    if not state.annotator and state.session_id in by_id:
        state.annotator = by_id[state.session_id].annotator
    if len({s.annotator for s in sessions}) > 1 or state.get(key):
        st.toggle(
            "All annotators",
            key=key,
            help=f"Off: the sessions of {plain(state.annotator) or 'the current annotator'} only.",
        )
    return [
        s
        for s in sessions
        if state.get(key) or not state.annotator or s.annotator == state.annotator or s.id == state.session_id
    ]


def show_session(session_id: int | None) -> None:
    """Make ``session_id`` the session the Label and History pages show, and name it in the address."""
    st.session_state.session_id = session_id
    st.session_state.outcome = None
    navigation.put_session_in_address(session_id)


def follow_address(
    sessions, *, missing: str = "is not open for labelling (it is closed, or not in this database)"
) -> None:
    """Open the session the address names (``?session=N``: a bookmark or a link), if it is among ``sessions``;
    otherwise say that it ``missing``."""
    asked = navigation.session_in_address()
    if asked is None or asked == st.session_state.session_id:
        return
    found = next((s for s in sessions if s.id == asked), None)
    if found is None:
        st.warning(
            plain(f"Session {asked} {missing}; the Sessions page lists every session and can reopen a closed one.")
        )
        return
    st.session_state.session_id = asked
    st.session_state.outcome = None
    if not st.session_state.annotator:
        st.session_state.annotator = found.annotator


def init_state() -> None:
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
