"""MarginLab's Streamlit entry point: ``streamlit run app/main.py``.

The pages live in ``app/views/``; each reads like a description of its screen.
What they do is in ``app/services/`` (datasets, sessions, labels, comparisons, exports)
and ``app/charts.py`` (figures), which tests call without a browser.
Nobody sees a page before signing in (``app/auth.py``); the pages offered depend on the role.
"""

import sys
from pathlib import Path

# ``streamlit run app/main.py`` puts app/ on the import path, not the project root.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app import auth, navigation, server_guard  # noqa: E402
from app.launch import keep_error_details_on_the_server  # noqa: E402
from app.ui.messages import PAGE_ERRORS, database_failed, failures_said, logger, show_failure  # noqa: E402
from app.ui.state import init_state, service  # noqa: E402
from core.process import prefer_small_pages  # noqa: E402


def run_app() -> None:
    keep_error_details_on_the_server()
    prefer_small_pages()  # (when started as `streamlit run app/main.py`; app.serve did it already)
    st.set_page_config(page_title="MarginLab", page_icon=":material/label:", layout="wide")
    init_state()
    try:
        who = auth.signed_in(service())
    except PAGE_ERRORS as error:  # the sign-in could not be checked (the database restarts, the disk is full)
        logger.error("the sign-in could not be checked", exc_info=error)
        database_failed(error, where="sign_in_check")
        return
    if who is None:
        server_guard.note_signed_out()  # (nothing uploaded or downloaded without a sign-in: app.server_guard)
        # Nobody signed in: the sign-in page, whatever the address asked for, and nothing else. It answers
        # at every page's address too, so a link to a page leads there once signed in.
        with failures_said("sign_in_page"):
            st.navigation(
                [st.Page(auth.sign_in_page, title="Sign in", url_path="sign-in", default=True)]
                + [st.Page(auth.sign_in_page, title="Sign in", url_path=name) for name in navigation.PAGES],
                position="hidden",
            ).run()
        return
    server_guard.note_signed_in(who)
    auth.sidebar(who)
    if who.is_owner:
        warn_when_unguarded()
    st.session_state.annotator = who.name  # the sessions lists show one's own sessions first
    show_failure()  # (what a button's callback met: app.ui.messages.guarded)
    # the database failing while a page is drawn (a server restarting, a damaged page of labels): said in the
    # app's words, with a way on, not in Streamlit's error box
    with failures_said("page"):
        st.navigation(navigation.pages(is_owner=who.is_owner)).run()


def warn_when_unguarded() -> None:
    """Owners are told when the app is shared on a network by a bare ``streamlit run``: uploads, downloads and
    the browser sign-in are then Streamlit's own, unguarded (``app.server_guard``)."""
    from streamlit import config

    if server_guard.unguarded_on_a_network(
        config.get_option("server.address"), served_to_a_browser=bool(st.context.headers.get("Host"))
    ):
        st.sidebar.warning(
            "This server was started with `streamlit run` and can be reached from other machines, "
            "without MarginLab's guard on uploads and downloads. Start it with `python -m app.serve "
            "--server.address ADDRESS` (what `make run` does) to share it.",
            icon=":material/shield:",
        )


# Streamlit runs this file as __main__ for every page view. A multiprocessing child started from a process
# that ran it (spawn re-reads the parent's main script as __mp_main__) must not open the app's database.
if __name__ == "__main__":
    run_app()
