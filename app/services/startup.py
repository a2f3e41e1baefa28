"""Opening the process's service, and doing it ahead of the first page view.

``open_service`` is what the first page view of a process does: load the compiled loops in the
background (compile them, on a new installation's first start), open the database (its checks and
migrations), add the demo dataset and the first owner when they are missing.  ``warm_start`` does
the same in a background thread (``app.serve``, what ``make run`` runs, waits for it before the
server listens), then loads the compiled loops and reopens the session labelled last (one
session's arrays in memory, whoever comes first);
``take_prepared`` hands its service to the first page view, waiting for it when it is not ready
yet, so the database is never opened twice at once.
A warm start that fails leaves nothing behind: the page view opens the database itself and reports
what is wrong, as it always did.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref

from app.services.errors import at_the_boundary
from app.services.marginlab import MarginLab

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_warming: dict[str, threading.Event] = {}  # set when the warm start's service is ready (or failed)
_prepared: dict[str, MarginLab] = {}


def _preload_compiled_loops() -> None:
    from core.solvers import _compile

    # the compiled loops load in the background (a first start compiles them, the first labels' part first):
    # the first page does not wait for them
    _compile.preload()


def compiled_code_progress():
    """How far this process's background preparation of the compiled loops has got (a
    ``core.solvers._compile.Progress``: on a first start it compiles them, what labelling needs first)."""
    from core.solvers import _compile

    return _compile.progress()


@at_the_boundary
def open_service(url: str, preload: bool = True) -> MarginLab:
    """The service over the database at ``url``, ready for the pages (``preload``: and the compiled
    loops loading in the background); a database that cannot be used raises ``DatabaseUnavailable``."""
    if preload:
        _preload_compiled_loops()
    service = MarginLab.from_url(url)
    service.ensure_demo_dataset()
    service.ensure_owner()  # a new installation's first owner (its password printed once, or from the environment)
    atexit.register(_save_snapshots_at_exit, weakref.ref(service))
    return service


#: seconds a stopping server waits in all for busy sessions and projects before it stores their snapshots
AT_EXIT_WAIT_S = 5.0


def _save_snapshots_at_exit(service_ref: weakref.ref) -> None:
    """When the server stops (Ctrl-C, SIGTERM: Streamlit stops, then the interpreter exits), the
    sessions and team projects in memory store a snapshot of their models, so the next start need
    not learn their latest answers again (at most ``AT_EXIT_WAIT_S`` in all for their locks).
    Nothing depends on it: the answers are stored as they are given."""
    service = service_ref()
    if service is None:
        return
    deadline = time.monotonic() + AT_EXIT_WAIT_S
    try:
        service.save_snapshots(wait_s=AT_EXIT_WAIT_S)
        service.save_project_snapshots(wait_s=max(0.0, deadline - time.monotonic()))
    except Exception as error:  # (the database may be gone by now: the next start replays the answers)
        logger.warning("the model snapshots were not stored at exit: %s", error)


def latest_session(service: MarginLab) -> int | None:
    """The open labelling session labelled (or changed) last, if any (not one holding a project's
    answers: a project is opened as a project, not as a session of its own)."""
    active = service.sessions(status="active", solo=True)
    return max(active, key=lambda s: (s.updated_at, s.id)).id if active else None


def _prepare(url: str, ready: threading.Event) -> None:
    try:
        service = open_service(url, preload=False)  # (the loops load after: the sign-in form waits for this)
    except Exception as error:  # (the first page view tries again, and says what is wrong)
        logger.warning("the database could not be opened ahead of the first page view: %s", error)
        ready.set()
        return
    with _lock:
        _prepared[url] = service
    ready.set()
    # then the session labelled last is brought back (snapshot + events), as the first tab after a
    # restart most often goes back to it, with what showing its item reads the first time; a page
    # that opens it meanwhile waits for this, once.  The compiled loops load after it (a first
    # label waits for them, at most, not the first page)
    try:
        session_id = latest_session(service)
        if session_id is not None:
            run = service.open_session(session_id)
            if run.shown is not None:
                run.item_display.warm(run.shown.item_index)
    except Exception as error:  # (opening it from its page says what is wrong)
        logger.warning("the last session could not be reopened ahead of the first page view: %s", error)
    _preload_compiled_loops()


def warm_start(url: str) -> threading.Event:
    """Open the service for ``url`` in a background (daemon) thread, once, then reopen the session
    labelled last; returns the event set when the service is ready (or could not be opened)."""
    with _lock:
        ready = _warming.get(url)
        if ready is None:
            ready = _warming[url] = threading.Event()
            threading.Thread(target=_prepare, args=(url, ready), name="marginlab-warm-start", daemon=True).start()
        return ready


def take_prepared(url: str) -> MarginLab | None:
    """The service a warm start opened for ``url`` (once: later calls get None), waiting for a warm
    start still under way; None when there was none or it failed."""
    with _lock:
        ready = _warming.get(url)
    if ready is not None:
        ready.wait()
    with _lock:
        return _prepared.pop(url, None)
