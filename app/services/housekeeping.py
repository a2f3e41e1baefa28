"""Keeping the database tidy: session names, closing and reopening sessions, deleting a dataset."""

from __future__ import annotations

from app.services.accounts import Accounts, Identity
from app.services.common import Outcome, ServiceError
from app.services.errors import service_boundary
from app.services.sessions import Sessions
from storage import history as stored_history
from storage import repository as repo
from storage.errors import StorageError


@service_boundary
class Housekeeping:
    """Keeping the database tidy: ``MarginLab.housekeeping`` (a renamed, closed or deleted session's
    run in memory, in ``sessions``, follows)."""

    def __init__(self, engine, accounts: Accounts, sessions: Sessions):
        self.engine, self.accounts, self.sessions = engine, accounts, sessions

    def session(self, session_id: int) -> repo.SessionInfo:
        return repo.get_session(self.engine, session_id)

    def rename_session(self, session_id: int, name: str | None, *, by: Identity | None = None) -> Outcome:
        """Name a session (blank: it is called by its number again); ``by``: the signed-in person."""
        if ended := self.accounts.sign_in_ended(by):
            return Outcome(False, ended, "error")
        try:
            stored_history.rename_session(self.engine, session_id, name)
        except StorageError as error:
            return Outcome(False, str(error), "error")
        run = self.sessions.in_memory(session_id)
        if run is not None:
            run.info = repo.get_session(self.engine, session_id)
        info = repo.get_session(self.engine, session_id)
        return Outcome(
            True,
            f"Session {session_id} is now called '{info.name}'."
            if info.name
            else f"Session {session_id} has no name any more.",
        )

    def reopen_session(self, session_id: int, *, by: Identity | None = None) -> Outcome:
        """Make a closed session active again (it is rebuilt from its labels when opened)."""
        if ended := self.accounts.sign_in_ended(by):
            return Outcome(False, ended, "error")
        repo.reopen_session(self.engine, session_id)
        return Outcome(True, f"Session {session_id} is open again.")

    def dataset_contents(self, dataset_id: int) -> stored_history.DatasetContents:
        """What deleting the dataset removes with it (sessions, labels, comparisons)."""
        return stored_history.dataset_contents(self.engine, dataset_id)

    def delete_dataset(self, dataset_id: int, *, confirm_name: str, by: Identity | None = None) -> Outcome:
        """Delete a dataset with its sessions, labels, snapshots and comparisons.

        ``confirm_name`` must be the dataset's name: the page asks for it after
        saying what goes, so that nothing is deleted by a stray click. ``by``: the signed-in person.
        """
        self.accounts.acting(by)
        contents = self.dataset_contents(dataset_id)
        if str(confirm_name).strip() != contents.name.strip():
            raise ServiceError(f"Type the dataset's name, '{contents.name}', to delete it; nothing was deleted.")
        self.sessions.forget_runs([s.id for s in self.sessions(dataset_id=dataset_id)])
        repo.delete_dataset(self.engine, dataset_id)
        return Outcome(True, f"Deleted dataset '{contents.name}' with {describe_contents(contents)}.")


def describe_contents(contents: stored_history.DatasetContents) -> str:
    """'its 1,797 items, 2 labelling sessions (ada, bea) with 120 answers and 1 comparison'."""

    def count(n: int, word: str) -> str:
        return f"{n:,} {word}{'' if n == 1 else 's'}"

    sessions = count(contents.n_sessions, "labelling session")
    if contents.annotators:
        sessions += f" ({', '.join(contents.annotators)})"
    return (
        f"its {count(contents.n_items, 'item')}, {sessions} with {count(contents.n_labels, 'stored answer')} "
        f"and {count(contents.n_comparisons, 'comparison')}"
    )
