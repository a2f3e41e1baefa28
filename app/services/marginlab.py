"""``MarginLab``: everything the pages do, over one engine (one per process and database).

Each concern lives in its own module and is mixed in here: datasets
(``app.services.datasets``), labelling sessions (``sessions``, with the live
run in ``labelling``), comparisons (``comparisons``), exports (``exports``),
accounts (``accounts``) and team projects (``projects``).
"""

from __future__ import annotations

import threading

from app.services.accounts import Accounts
from app.services.comparisons import Comparisons
from app.services.datasets import Datasets
from app.services.exports import Exports
from app.services.housekeeping import Housekeeping
from app.services.labelling import LabellingRun
from app.services.projects import Projects
from app.services.sessions import Sessions
from storage.engine import database_url, init_db, make_engine


class MarginLab(Datasets, Sessions, Comparisons, Exports, Housekeeping, Accounts, Projects):
    """Everything the pages do, over one engine (one per process and database)."""

    def __init__(self, engine, *, use_snapshots: bool = True):
        self.engine = engine
        #: resume sessions from their latest snapshot (False: always replay every event)
        self.use_snapshots = bool(use_snapshots)
        self._runs: dict[int, LabellingRun] = {}
        self._runs_lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str | None = None) -> MarginLab:
        """The service over the database at ``url`` (default: ``storage.engine.database_url()``).

        Raises ``storage.errors.UnusableDatabaseError`` for a database that is not MarginLab's, is
        damaged or is newer than this version; storage refuses it before changing anything.
        """
        url = url or database_url()
        engine = make_engine(url)
        init_db(engine)
        return cls(engine)
