"""``MarginLab``: everything the pages do, over one engine (one per process and database).

A thin facade over one object per concern, each given the objects it uses when it is made:

- ``accounts`` (``app.services.accounts``): who may sign in and act;
- ``datasets`` (``datasets``): bundled datasets and CSV uploads, given ``accounts``;
- ``sessions`` (``sessions``): labelling sessions and their live runs (``labelling``), given
  ``accounts`` and ``datasets``;
- ``housekeeping``: session names, closing and reopening, deleting a dataset, given ``accounts`` and
  ``sessions``;
- ``exports``: labelled items with provenance, given ``datasets``;
- ``comparisons``: heuristics side by side, given ``accounts``, ``datasets`` and ``sessions``;
- ``projects``: team projects, given ``accounts`` and ``datasets``.

Each part listing things is called to list them: ``service.datasets()``, ``service.sessions(...)``,
``service.projects(identity)``, ``service.accounts()``, ``service.comparisons(...)``.  The pages call
the other methods on the facade, which hands each to its part (``FORWARDED`` names them), e.g.
``service.import_csv(...)`` is ``service.datasets.import_csv(...)``.
"""

from __future__ import annotations

from app.services.accounts import Accounts
from app.services.common import forwarded
from app.services.comparisons import Comparisons
from app.services.datasets import Datasets
from app.services.exports import Exports
from app.services.housekeeping import Housekeeping
from app.services.projects import Projects
from app.services.sessions import Sessions
from storage.engine import database_url, init_db, make_engine

#: the methods of the facade, by the part that does them (``service.name(...)`` is ``service.part.name(...)``)
FORWARDED: dict[str, tuple[type, tuple[str, ...]]] = {
    "accounts": (
        Accounts,
        (
            "ensure_owner",
            "nobody_signed_in_yet",
            "sign_in",
            "sign_in_external",
            "sign_in_ended",
            "acting",
            "require_owner",
            "still_valid",
            "begin_browser_sign_in",
            "redeem_browser_ticket",
            "browser_identity",
            "sign_out",
            "create_account",
            "change_password",
            "set_disabled",
        ),
    ),
    "datasets": (
        Datasets,
        (
            "dataset",
            "ensure_demo_dataset",
            "bundled_names",
            "import_bundled",
            "preview_csv",
            "column_values",
            "import_csv",
            "set_eval_fraction",
        ),
    ),
    "sessions": (
        Sessions,
        (
            "start_session",
            "open_demo_session",
            "open_session",
            "save_snapshots",
            "close_session",
            "known_problem",
            "is_open",
            "forget_runs",
        ),
    ),
    "housekeeping": (
        Housekeeping,
        ("session", "rename_session", "reopen_session", "dataset_contents", "delete_dataset"),
    ),
    "exports": (Exports, ("annotators", "export_file_name", "export_labels")),
    "comparisons": (
        Comparisons,
        (
            "comparison_scheduler",
            "run_comparison",
            "run_class_comparison",
            "summary_frame",
            "reference_note",
            "stop_summary_frame",
            "comparison",
            "session_curves",
        ),
    ),
    "projects": (
        Projects,
        (
            "create_project",
            "set_project_find",
            "add_member",
            "members",
            "save_project_snapshots",
            "open_project",
            "project_for",
            "settle",
            "agreement_csv",
            "agreement_summary_csv",
            "project_labels_csv",
            "own_history",
            "own_answer_words",
        ),
    ),
}
#: settings of the sign-in checks (``Accounts``), read and set on the facade too (tests shorten the pauses)
ACCOUNT_SETTINGS = ("failure_delay_s", "verify_wait_s", "verifications")


class MarginLab:
    """Everything the pages do, over one engine (one per process and database): see the module docstring."""

    def __init__(self, engine, *, use_snapshots: bool = True):
        self.engine = engine
        self.accounts = Accounts(engine)
        self.datasets = Datasets(engine, self.accounts)
        self.sessions = Sessions(engine, self.accounts, self.datasets, use_snapshots=use_snapshots)
        self.housekeeping = Housekeeping(engine, self.accounts, self.sessions)
        self.exports = Exports(engine, self.datasets)
        self.comparisons = Comparisons(engine, self.accounts, self.datasets, self.sessions)
        self.projects = Projects(engine, self.accounts, self.datasets, use_snapshots=use_snapshots)

    @property
    def use_snapshots(self) -> bool:
        """Whether sessions and projects opened from now on resume from their latest snapshot (False:
        they always replay every answer)."""
        return self.sessions.use_snapshots

    @use_snapshots.setter
    def use_snapshots(self, value: bool) -> None:
        self.sessions.use_snapshots = self.projects.use_snapshots = bool(value)

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


def _account_setting(name: str) -> property:
    return property(
        lambda self: getattr(self.accounts, name),
        lambda self, value: setattr(self.accounts, name, value),
        doc=f"``accounts.{name}``",
    )


for _part, (_source, _names) in FORWARDED.items():
    for _name in _names:
        setattr(MarginLab, _name, forwarded(_part, _name, _source))
for _name in ACCOUNT_SETTINGS:
    setattr(MarginLab, _name, _account_setting(_name))
