"""Start the app: ``python -m app.serve [Streamlit options]`` (what ``make run`` runs).

The same server as ``streamlit run app/main.py`` with the same options, started warm: before the
server listens, it imports what the pages use (NumPy, SciPy, pandas, SQLAlchemy, the services)
and opens the database (checks, migrations, the demo dataset, the first owner), about 1.5 s on a
2-core machine; then, in the background while the server starts, it brings back the open session
labelled last and loads the compiled loops (``app.services.startup``; a new installation's first
start compiles them there, what the demo's first labels need first, and says so on the console and
the labelling pages: ``core.solvers._compile``). The first browser tab after a (re)start does not
wait for them.
Uploads, downloads and Streamlit's metrics are guarded here only (``app.server_guard``: uploads from
signed-in owners only, downloads for the browser session that made them, no metrics): a server started
with ``streamlit run app/main.py`` serves them as Streamlit does. The endpoint that gives a browser its
sign-in cookie is served here only too: under ``streamlit run app/main.py`` a sign-in holds per tab.
A tab left open across a restart loads its page from the new server by itself (``app.reconnect``;
under ``streamlit run app/main.py`` it goes on showing the old page until clicked).
Runs as a script too (``python path/to/app/serve.py``), from any directory.  Files changed under
a running server are not reloaded unless ``--server.fileWatcherType auto`` is given.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN = ROOT / "app" / "main.py"
STARTING = "MarginLab: starting: loading the app and opening its database…"
#: seconds between two "still loading" lines while the warm start is under way
HEARTBEAT_S = 5.0


def warm_start() -> None:
    """Import what the pages use and open the database before the server listens (the first tab
    then finds them ready); the session labelled last and the compiled loops go on loading in the
    background (``app.services.startup``)."""
    try:
        from app.services import startup
        from storage.engine import database_url

        ready = startup.warm_start(database_url())
        started = time.monotonic()
        while not ready.wait(HEARTBEAT_S):  # (a busy machine: say it is still at work, never silent > 10 s)
            print(
                f"MarginLab: still loading the app and opening its database "
                f"({time.monotonic() - started:.0f} s so far)…",
                file=sys.stderr,
                flush=True,
            )
    except Exception as error:  # (the first page view does it all again, and says what is wrong)
        print(f"MarginLab: the warm start did not happen ({error}).", file=sys.stderr)


def warm_first_page() -> None:
    """Pay now, in the background while the server starts, two costs that the first page of a process
    pays otherwise, about 0.2 s on a 2-core machine: Streamlit's first element asks ``inspect.stack()``
    whether it runs in a REPL, which the first time resolves the file of every loaded module (filled
    here: ``inspect`` keeps the table), and the first alert with non-ASCII text loads Streamlit's emoji
    table."""
    import importlib
    import inspect

    inspect.getmodule(sys._getframe())
    try:
        importlib.import_module("streamlit.emojis")
    except ImportError:  # (another Streamlit version: nothing to load ahead)
        pass


def main(argv: list[str] | None = None) -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from core.process import prefer_small_pages

    prefer_small_pages()  # (before the warm start allocates the session's arrays: see core.process)
    # (the warm start takes seconds, more on a busy machine, before Streamlit prints its address)
    print(STARTING, file=sys.stderr, flush=True)
    warm_start()  # (in this thread, before Streamlit: its Plotly setup peeks at a pandas being imported)
    from streamlit.web import cli

    from app import reconnect, server_guard

    server_guard.install()  # uploads, downloads and metrics only for whom they are meant (app.server_guard)
    reconnect.install()  # a tab left open across a restart loads its page from the new server (app.reconnect)
    threading.Thread(target=warm_first_page, name="marginlab-warm-page", daemon=True).start()

    args = list(sys.argv[1:] if argv is None else argv)
    if not any(a.startswith("--server.fileWatcherType") for a in args):
        # the app as installed does not reload its modules when files change under it (a reload in the
        # middle of a session swaps the classes the signed-in sessions hold); --server.fileWatcherType
        # auto brings Streamlit's reloading back for development
        args = ["--server.fileWatcherType", "none", *args]
    sys.argv = ["streamlit", "run", str(MAIN), *args]
    cli.main()


if __name__ == "__main__":
    main()
