"""What a page says besides its content: a failure of the database in the app's words (a page's, a part's,
a button callback's), the outcome of an answer, a first start's model preparation, a data error."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator

import streamlit as st

from app.services import ServiceError, startup
from app.services.database import database_problem
from app.ui.text import plain

logger = logging.getLogger(__name__)


def database_failed(error: Exception, *, where: str = "page") -> None:
    """Say that the database cannot be opened or used (no traceback, no server path), with a way on: try
    again (once the server is back, the disk has room) or, from the menu, another page."""
    st.error(plain(database_problem(error)))
    st.button("Try again", key=f"try_again_{where}", icon=":material/refresh:")


#: what a page says in its own words rather than in Streamlit's error box: the service's error, which the
#: service makes of everything refused or failed under it (the database failing: ``DatabaseUnavailable``)
PAGE_ERRORS = ServiceError
#: the session-state key of a failure met by a button's callback, said on the next run of the page
FAILURE_KEY = "page_failure"


@contextlib.contextmanager
def failures_said(where: str) -> Iterator[None]:
    """Run a page, or a part of one (a fragment), saying a failure of the database in the app's words
    (``database_failed``) instead of Streamlit's generic error box; the server's log keeps the traceback."""
    try:
        yield
    except PAGE_ERRORS as error:
        logger.error("%s: the database failed", where, exc_info=error)
        database_failed(error, where=where)


def page_part(where: str) -> Callable[[Callable], Callable]:
    """A part of a page run on its own (a fragment) that says a callback's failure (``show_failure``) and its
    own (``failures_said``) itself: a fragment's rerun runs neither the page nor ``app/main.py``."""

    def wrap(part: Callable) -> Callable:
        @functools.wraps(part)
        def run(*args, **kwargs):
            show_failure()
            with failures_said(where):
                part(*args, **kwargs)

        return run

    return wrap


def guarded(callback: Callable) -> Callable:
    """A button's callback whose failure (as ``failures_said``) is kept to be said by ``show_failure`` on
    the page's next run, instead of Streamlit's error box."""

    @functools.wraps(callback)
    def run(*args, **kwargs):
        try:
            return callback(*args, **kwargs)
        except PAGE_ERRORS as error:
            logger.error("%s: the database failed", callback.__name__, exc_info=error)
            st.session_state[FAILURE_KEY] = database_problem(error)

    return run


def show_failure() -> None:
    """Say the failure a callback met (``guarded``), once."""
    failure = st.session_state.pop(FAILURE_KEY, None)
    if failure:
        st.error(plain(failure))


def data_error_text(error: Exception, filename: str | None) -> str:
    """A data error message naming the uploaded file (the loader only sees bytes and says 'data')."""
    text = str(error)
    if filename and text.startswith("data: "):
        return f"{filename}: {text[len('data: ') :]}"
    return text


@contextlib.contextmanager
def waiting_for_the_model():
    """Around an answer that the model learns (a button's callback): while a first start compiles what
    labelling needs, or what the first choice of C and gamma from the labels needs, a spinner with the
    seconds spent says why the next item has not come yet (the page itself is greyed out until the answer
    returns; an answer that does not wait is back before the spinner shows)."""
    progress = startup.compiled_code_progress()
    if progress.preparing_first_labels:
        text = (
            "Preparing the model for this computer (once; resumes if interrupted): your answer is saved, the next item "
            "follows when the model is ready…"
        )
    elif progress.preparing_first_choice:
        text = (
            f"Preparing the model for this computer (once; resumes if interrupted): your answer is saved; at "
            f"{progress.first_choice_at} labels, C and gamma are chosen from your labels, and that part is still "
            "being compiled: the next item follows when it is ready…"
        )
    else:
        yield
        return
    with st.spinner(text, show_time=True):
        yield


def preparing_model_notice() -> None:
    """On a first start, while the background compile has not yet prepared what labelling needs, say
    so above the item: a label given meanwhile is saved at once and the next item waits for it; then,
    while it prepares what the first choice of C and gamma from the labels needs, say which label waits."""
    progress = startup.compiled_code_progress()
    if progress.preparing_first_choice:
        st.caption(
            f"Preparing the model for this computer (once; resumes if interrupted): {progress.done} of "
            f"{progress.total} parts ready. Choosing C and gamma from your labels (at "
            f"{progress.first_choice_at} labels, when set for this session) needs the first "
            f"{progress.for_choosing}: the label that reaches it may wait until they are ready; the other "
            "labels do not wait."
        )
        return
    if not progress.preparing_first_labels:
        return
    with st.container(key="preparing_model"):
        # the parts counted as the console counts them (core.solvers._compile.Reporter): of the whole plan
        st.info(
            f"Preparing the model for this computer (once; resumes if interrupted): {progress.done} of "
            f"{progress.total} parts ready; labelling needs the first {progress.for_labelling} "
            f"({progress.ready_for_labelling} ready). A label given now is saved at once; the next item "
            "follows when the model is ready (a minute or two).",
            icon=":material/hourglass_top:",
        )
        st.progress(progress.ready_for_labelling / progress.for_labelling)


def show_outcome() -> None:
    outcome = st.session_state.get("outcome")
    if outcome is None:
        return
    if outcome.ok and outcome.kind == "info":
        st.caption(plain(outcome.message))
    elif outcome.kind == "error":
        st.error(plain(outcome.message))
    else:
        st.warning(plain(outcome.message))
