"""Start the app: ``python -m app.serve [Streamlit options]`` (what ``make run`` runs).

The same server as ``streamlit run app/main.py`` with the same options, started warm: while the
server starts, a background thread imports what the pages use (NumPy, SciPy, pandas, Numba,
SQLAlchemy, the services), loads the compiled loops and opens the database
(``app.services.startup``), so the first browser tab after a start does not wait for that.
Runs as a script too (``python path/to/app/serve.py``), from any directory.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN = ROOT / "app" / "main.py"


def _warm_start() -> None:
    try:
        from app.services import startup
        from storage.engine import database_url

        startup.warm_start(database_url())
    except Exception as error:  # (the first page view does it all again, and says what is wrong)
        print(f"MarginLab: the warm start did not happen ({error}).", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    # Streamlit first, in this thread: it sets up Plotly, which peeks at a pandas module that the
    # other thread may be importing. A page's script imports pandas itself before it draws anything,
    # and an import waits for a module another thread is still importing.
    from streamlit.web import cli

    # (importing the services takes a second; the server starts meanwhile)
    threading.Thread(target=_warm_start, name="marginlab-imports", daemon=True).start()

    sys.argv = ["streamlit", "run", str(MAIN), *(sys.argv[1:] if argv is None else argv)]
    cli.main()


if __name__ == "__main__":
    main()
