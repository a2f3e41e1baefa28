"""Repository functions for teams: accounts, projects, item reservations and settled answers.

Like ``storage.repository``: each function runs its own short transaction and
returns plain values. The answers of a project are ordinary labels: each member
labels in a labelling session of their own (``project_members.session_id``), so
exports, provenance and the undo guard work for them as for any session.

Order of a project's answers. Every answer, undo and settlement of a project
first locks the project's row (PostgreSQL: ``FOR UPDATE``; a file database's writer
holds the whole database anyway), so they take turns: label ids within one
project grow in the order their transactions commit. A process that has seen
every answer up to label id L therefore needs only the answers after L to catch
up, and ``projects.revision`` / ``projects.edits`` tell it cheaply whether
anything happened and whether it was only new answers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from storage.errors import DuplicateLabelError, InvalidLabelError, NotFoundError, StorageError
from storage.models import (
    PROJECT_STATUSES,
    ROLES,
    Account,
    Adjudication,
    Annotator,
    BrowserSignIn,
    Dataset,
    Item,
    ItemReservation,
    Label,
    LabellingSession,
    Project,
    ProjectMember,
    ProjectSnapshot,
    SignInThrottle,
    utc_now,
)
from storage.repository.annotators import _annotator_id, _annotator_name
from storage.repository.common import EngineLike, _jsonable, _non_empty, _optional_float, reading, writing
from storage.repository.labels import LabelEvent, _item_id, _item_index, _label_event, _label_value, events_query
from storage.repository.snapshots import SNAPSHOTS_KEPT, _load_arrays, _save_arrays
from storage.validation import rowcount, storable_text, text_length


class DuplicateAccountError(StorageError):
    """An account with that name exists already."""


class LastOwnerError(StorageError):
    """The change would leave no enabled owner."""


class SignInLockedError(StorageError):
    """Sign-ins under a key are locked until ``until``."""

    def __init__(self, until: dt.datetime | None):
        super().__init__(f"Sign-ins are locked until {until:%Y-%m-%d %H:%M:%S} UTC." if until is not None
                         else "Sign-ins are locked for now.")
        self.until = until


class ItemTakenError(StorageError):
    """The item has all the answers the project asks for (another annotator answered it)."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class AccountInfo:
    id: int
    annotator_id: int
    name: str
    role: str
    password_hash: str | None
    session_epoch: int
    failed_attempts: int
    disabled: bool
    last_sign_in_at: dt.datetime | None
    created_at: dt.datetime


@dataclass(frozen=True)
class ProjectInfo:
    id: int
    name: str
    dataset_id: int
    dataset_name: str
    strategy: str
    solver: str
    params: dict[str, Any]
    seed: int
    labels_per_item: int
    overlap_share: float
    reservation_seconds: int
    status: str
    revision: int
    edits: int
    created_at: dt.datetime

    @property
    def find(self) -> str | None:
        """The owner's words for what a Positive answer means in the project (``params["find"]``), or None."""
        return self.params.get("find") or None


@dataclass(frozen=True)
class ProjectAnswer:
    """One active answer of a project member (skips included, as value 0)."""

    label_id: int
    item_index: int
    annotator: str
    value: int
    session_id: int
    created_at: dt.datetime


@dataclass(frozen=True)
class ProjectModelSnapshot:
    """A stored project model: the loop's ``arrays`` and ``meta``, and the project's ``(revision, edits)``
    when it was stored."""

    revision: int
    edits: int
    arrays: dict[str, Any]
    meta: dict[str, Any]
    created_at: dt.datetime


@dataclass(frozen=True)
class Settlement:
    item_index: int
    value: int
    settled_by: str | None
    note: str
    created_at: dt.datetime


# --------------------------------------------------------------------------- accounts


_ACCOUNT_COLUMNS = (Account, Annotator.name)


def _account_info(row: Any) -> AccountInfo:
    account: Account = row.Account
    return AccountInfo(
        id=account.id, annotator_id=account.annotator_id, name=row.name, role=account.role,
        password_hash=account.password_hash, session_epoch=account.session_epoch,
        failed_attempts=account.failed_attempts,
        disabled=account.disabled_at is not None, last_sign_in_at=account.last_sign_in_at,
        created_at=account.created_at,
    )


def _accounts_query() -> Any:
    return select(*_ACCOUNT_COLUMNS).join(Annotator, Annotator.id == Account.annotator_id)


def create_account(engine: EngineLike, *, name: str, role: str, password_hash: str | None) -> AccountInfo:
    """Create the account of annotator ``name`` (the annotator is created when new)."""
    name = _annotator_name(name)
    if role not in ROLES:
        raise StorageError(f"A role is one of {', '.join(ROLES)}, not {role!r}.")
    if password_hash is not None:
        password_hash = storable_text(password_hash, "The password hash", max_length=255, error=StorageError)
    try:
        with writing(engine) as session:
            annotator_id = _annotator_id(session, name)
            if session.execute(select(Account.id).where(Account.annotator_id == annotator_id)).first():
                raise DuplicateAccountError(f"An account named '{name}' exists already.")
            session.add(Account(annotator_id=annotator_id, role=role, password_hash=password_hash,
                                session_epoch=0, failed_attempts=0))
    except IntegrityError:  # created by another transaction at the same moment
        raise DuplicateAccountError(f"An account named '{name}' exists already.") from None
    account = get_account(engine, name)
    assert account is not None
    return account


def get_account(engine: EngineLike, name: str) -> AccountInfo | None:
    """The account of annotator ``name`` (surrounding spaces ignored), or None."""
    if not isinstance(name, str) or not name.strip():
        return None
    with reading(engine) as session:
        row = session.execute(_accounts_query().where(Annotator.name == name.strip())).first()
    return None if row is None else _account_info(row)


def get_account_by_id(engine: EngineLike, account_id: int) -> AccountInfo | None:
    with reading(engine) as session:
        row = session.execute(_accounts_query().where(Account.id == int(account_id))).first()
    return None if row is None else _account_info(row)


def list_accounts(engine: EngineLike) -> list[AccountInfo]:
    with reading(engine) as session:
        rows = session.execute(_accounts_query().order_by(Annotator.name)).all()
    return [_account_info(row) for row in rows]


def count_owners(engine: EngineLike) -> int:
    """Owner accounts that can sign in (not disabled)."""
    with reading(engine) as session:
        return session.execute(
            select(func.count()).select_from(Account).where(Account.role == "owner", Account.disabled_at.is_(None))
        ).scalar_one()


def record_sign_in(engine: EngineLike, account_id: int, *, succeeded: bool) -> int:
    """Note a sign-in: success resets the account's failure count, a failure adds one. Returns the count."""
    values: dict[str, Any] = (dict(failed_attempts=0, last_sign_in_at=utc_now()) if succeeded
                              else dict(failed_attempts=Account.failed_attempts + 1))
    with writing(engine) as session:
        count = session.execute(update(Account).where(Account.id == int(account_id)).values(**values)
                                .returning(Account.failed_attempts)).scalar()
    if count is None:
        raise NotFoundError(f"Account {account_id} does not exist.")
    return count


def set_password_hash(engine: EngineLike, account_id: int, password_hash: str) -> None:
    """Store a new password hash; every sign-in made before ends (``session_epoch`` changes)."""
    password_hash = storable_text(password_hash, "The password hash", max_length=255, error=StorageError)
    _update_account(engine, account_id, password_hash=password_hash, failed_attempts=0,
                    session_epoch=Account.session_epoch + 1)


def set_account_disabled(engine: EngineLike, account_id: int, disabled: bool) -> None:
    """Disable (every sign-in ends) or enable an account; ``LastOwnerError`` for the last enabled owner."""
    _update_account(engine, account_id, disabled_at=utc_now() if disabled else None,
                    session_epoch=Account.session_epoch + 1)


def set_account_role(engine: EngineLike, account_id: int, role: str) -> None:
    """Give an account another role (every sign-in ends); ``LastOwnerError`` for the last enabled owner."""
    if role not in ROLES:
        raise StorageError(f"A role is one of {', '.join(ROLES)}, not {role!r}.")
    _update_account(engine, account_id, role=role, session_epoch=Account.session_epoch + 1)


def _enabled_owners() -> Any:
    return select(Account.id).where(Account.role == "owner", Account.disabled_at.is_(None))


def _update_account(engine: EngineLike, account_id: int, **values: Any) -> None:
    """Change an account, in a transaction that leaves at least one enabled owner and revokes the account's
    browser sign-ins (each change made here, a password, a role, disabling, ends them).

    The enabled owners' rows are locked first, in id order (PostgreSQL: ``FOR UPDATE``; a
    file database's writer holds the whole database), so two changes that could each take away an
    owner take turns, and the second counts the owners the first left.
    """
    with writing(engine) as session:
        owners = set(session.execute(_enabled_owners().order_by(Account.id).with_for_update()).scalars())
        changed = rowcount(session.execute(update(Account).where(Account.id == int(account_id)).values(**values)))
        if not changed:
            raise NotFoundError(f"Account {account_id} does not exist.")
        _revoke_browser_sign_ins(session, int(account_id), utc_now())  # (every change here ends its sign-ins)
        if int(account_id) in owners and session.execute(
                select(func.count()).select_from(_enabled_owners().subquery())).scalar_one() == 0:
            raise LastOwnerError("The last owner cannot be disabled or given another role.")  # (rolled back)


# --------------------------------------------------------------------------- browser sign-ins

#: revoked or expired browser sign-ins are deleted this long after they ended
BROWSER_SIGN_INS_KEPT = dt.timedelta(days=1)


@dataclass(frozen=True)
class BrowserSignInInfo:
    """A browser sign-in (never its token: only the token's hash is stored, and not returned)."""

    id: int
    account_id: int
    session_epoch: int
    created_at: dt.datetime
    last_used_at: dt.datetime | None
    expires_at: dt.datetime
    revoked_at: dt.datetime | None
    redeemed: bool  # its ticket was exchanged for the browser's token


def _browser_sign_in_info(row: BrowserSignIn) -> BrowserSignInInfo:
    return BrowserSignInInfo(id=row.id, account_id=row.account_id, session_epoch=row.session_epoch,
                             created_at=row.created_at, last_used_at=row.last_used_at, expires_at=row.expires_at,
                             revoked_at=row.revoked_at, redeemed=row.token_hash is not None)


def _digest(text: str, what: str) -> str:
    """A SHA-256 hex digest as stored (64 characters); ``StorageError`` for anything else."""
    if not isinstance(text, str) or len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise StorageError(f"{what} must be a SHA-256 hex digest.")
    return text


def create_browser_sign_in(engine: EngineLike, account_id: int, *, session_epoch: int, ticket_hash: str,
                           ticket_expires_at: dt.datetime, created_at: dt.datetime,
                           expires_at: dt.datetime) -> int | None:
    """Start a browser sign-in of an account, redeemable once with the ticket whose hash is ``ticket_hash``
    until ``ticket_expires_at``; its id, or None when the account is disabled, gone, or its
    ``session_epoch`` is not ``session_epoch`` any more (checked in the same transaction as the insert).
    Browser sign-ins that ended more than ``BROWSER_SIGN_INS_KEPT`` ago are deleted on the way."""
    ticket_hash = _digest(ticket_hash, "A ticket's hash")
    now = utc_now()
    with writing(engine) as session:
        holds = session.execute(select(Account.id).where(
            Account.id == int(account_id), Account.session_epoch == int(session_epoch),
            Account.disabled_at.is_(None))).first()
        if holds is None:
            return None
        row = BrowserSignIn(account_id=int(account_id), session_epoch=int(session_epoch), ticket_hash=ticket_hash,
                            ticket_expires_at=ticket_expires_at, created_at=created_at, expires_at=expires_at)
        session.add(row)
        session.flush()
        ended = now - BROWSER_SIGN_INS_KEPT
        session.execute(delete(BrowserSignIn).where(or_(BrowserSignIn.expires_at < ended,
                                                        BrowserSignIn.revoked_at < ended)))
        return row.id


def redeem_browser_ticket(engine: EngineLike, ticket_hash: str, token_hash: str, *,
                          now: dt.datetime) -> BrowserSignInInfo | None:
    """Exchange a ticket for a token, once: the browser sign-in whose ticket hashes to ``ticket_hash`` now
    answers to the token hashing to ``token_hash``, and the ticket is gone. None (nothing changed) when
    no such ticket is waiting: unknown, used, expired, or its sign-in ended (revoked, expired, the account
    disabled or changed). A conditional update: of two requests with one ticket, one wins."""
    ticket_hash, token_hash = _digest(ticket_hash, "A ticket's hash"), _digest(token_hash, "A token's hash")
    account_holds = select(Account.id).where(
        Account.id == BrowserSignIn.account_id, Account.session_epoch == BrowserSignIn.session_epoch,
        Account.disabled_at.is_(None)).exists()
    with writing(engine) as session:
        found = session.execute(
            update(BrowserSignIn).where(
                BrowserSignIn.ticket_hash == ticket_hash, BrowserSignIn.token_hash.is_(None),
                BrowserSignIn.ticket_expires_at > now, BrowserSignIn.expires_at > now,
                BrowserSignIn.revoked_at.is_(None), account_holds)
            .values(token_hash=token_hash, ticket_hash=None, ticket_expires_at=None, last_used_at=now)
            .returning(BrowserSignIn.id)).scalar()
        if found is None:
            return None
        row = session.get(BrowserSignIn, found)
        assert row is not None, "the row this transaction just updated"
        return _browser_sign_in_info(row)


def find_browser_sign_in(engine: EngineLike, token_hash: str) -> BrowserSignInInfo | None:
    """The browser sign-in answering to the token that hashes to ``token_hash`` (ended or not), or None."""
    try:
        token_hash = _digest(token_hash, "A token's hash")
    except StorageError:
        return None
    with reading(engine) as session:
        row = session.execute(select(BrowserSignIn).where(BrowserSignIn.token_hash == token_hash)).scalar()
        return None if row is None else _browser_sign_in_info(row)


def get_browser_sign_in(engine: EngineLike, sign_in_id: int) -> BrowserSignInInfo | None:
    with reading(engine) as session:
        row = session.get(BrowserSignIn, int(sign_in_id))
        return None if row is None else _browser_sign_in_info(row)


def browser_sign_ins(engine: EngineLike, account_id: int) -> list[BrowserSignInInfo]:
    """An account's browser sign-ins, oldest first (ended ones included until they are deleted)."""
    with reading(engine) as session:
        rows = session.execute(select(BrowserSignIn).where(BrowserSignIn.account_id == int(account_id))
                               .order_by(BrowserSignIn.id)).scalars().all()
        return [_browser_sign_in_info(row) for row in rows]


def note_browser_sign_in_used(engine: EngineLike, sign_in_id: int, *, now: dt.datetime) -> None:
    with writing(engine) as session:
        session.execute(update(BrowserSignIn).where(BrowserSignIn.id == int(sign_in_id)).values(last_used_at=now))


def revoke_browser_sign_ins(engine: EngineLike, account_id: int) -> int:
    """End every browser sign-in of an account that has not ended (signing out); how many there were."""
    with writing(engine) as session:
        return _revoke_browser_sign_ins(session, int(account_id), utc_now())


def _revoke_browser_sign_ins(session: Session, account_id: int, now: dt.datetime) -> int:
    return rowcount(session.execute(update(BrowserSignIn).where(
        BrowserSignIn.account_id == account_id, BrowserSignIn.revoked_at.is_(None))
        .values(revoked_at=now, ticket_hash=None, ticket_expires_at=None)))


# --------------------------------------------------------------------------- sign-in throttles


def charge_sign_in(engine: EngineLike, locks: Mapping[str, Callable[[int], float]], *, now: dt.datetime,
                   forget_before: dt.datetime) -> dt.datetime | None:
    """Count a sign-in attempt under every key of ``locks`` before its password is checked, all or none.

    ``locks[key](failures)`` is how many seconds the key is locked for once it has ``failures``
    (0: not locked). Each key's count goes up in a conditional update that only a key not
    locked at ``now`` passes; the key that reaches its limit is locked in the same transaction,
    which holds the rows (PostgreSQL: the update's row lock; a file database: its writer's lock) until it
    commits. Parallel attempts under one key therefore take turns, and each sees the count and
    the lock the one before left: no stale read decides a lock. A key untouched since
    ``forget_before`` starts again from nothing. Raises ``SignInLockedError`` (nothing counted)
    when a key is locked; returns the latest lock this attempt set, or None.
    """
    fresh = or_(SignInThrottle.locked_until.is_(None), SignInThrottle.locked_until <= now)
    locked_until = None
    with writing(engine) as session:
        for key in sorted(locks):  # one order everywhere: two attempts never wait for each other in a circle
            _ensure_throttle(session, key, now)
            failures = session.execute(
                update(SignInThrottle).where(SignInThrottle.key == key, fresh).values(
                    failures=case((SignInThrottle.updated_at < forget_before, 1), else_=SignInThrottle.failures + 1),
                    updated_at=now,
                ).returning(SignInThrottle.failures)
            ).scalar()
            if failures is None:
                until = session.execute(select(SignInThrottle.locked_until).where(SignInThrottle.key == key)).scalar()
                raise SignInLockedError(until)  # (rolled back: nothing counted)
            seconds = locks[key](failures)
            if seconds > 0:
                until = now + dt.timedelta(seconds=seconds)
                session.execute(update(SignInThrottle).where(SignInThrottle.key == key).values(locked_until=until))
                locked_until = until if locked_until is None else max(locked_until, until)
    _forget_throttles(engine, forget_before, now)
    return locked_until


def clear_sign_in(engine: EngineLike, *, starts_over: str, refunded: str) -> None:
    """After a successful sign-in: the key ``starts_over`` is forgotten, and ``refunded`` gets back the
    attempt counted for it (``charge_sign_in`` counted it as failed before the password was checked)."""
    with writing(engine) as session:
        for key in sorted((starts_over, refunded)):
            if key == starts_over:
                session.execute(delete(SignInThrottle).where(SignInThrottle.key == key))
            else:
                session.execute(update(SignInThrottle).where(SignInThrottle.key == key, SignInThrottle.failures > 0)
                                .values(failures=SignInThrottle.failures - 1))


def _ensure_throttle(session: Session, key: str, now: dt.datetime) -> None:
    """The key's row, created (with nothing counted) when new; a row created at the same moment by another
    transaction is taken (as ``repository._annotator_id`` does)."""
    if session.execute(select(SignInThrottle.key).where(SignInThrottle.key == key)).first() is not None:
        return
    try:
        with session.begin_nested():
            session.add(SignInThrottle(key=key, failures=0, locked_until=None, updated_at=now))
    except IntegrityError:
        pass


def _forget_throttles(engine: EngineLike, forget_before: dt.datetime, now: dt.datetime) -> None:
    """Delete the keys untouched since ``forget_before`` and not locked (those another transaction holds
    are skipped: PostgreSQL's ``SKIP LOCKED``)."""
    with writing(engine) as session:
        stale = list(session.execute(
            select(SignInThrottle.key).where(
                SignInThrottle.updated_at < forget_before,
                or_(SignInThrottle.locked_until.is_(None), SignInThrottle.locked_until <= now))
            .limit(1000).with_for_update(skip_locked=True)
        ).scalars())
        if stale:
            session.execute(delete(SignInThrottle).where(SignInThrottle.key.in_(stale)))


# --------------------------------------------------------------------------- projects


def in_overlap(seed: int, share: float, item_index: int) -> bool:
    """Whether an item is among the share of a project's items that get several answers.

    A hash of (seed, item), so every process and database agrees without storing a list.
    """
    if share <= 0:
        return False
    if share >= 1:
        return True
    digest = hashlib.sha256(f"marginlab-overlap:{int(seed)}:{int(item_index)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def answers_needed(project: ProjectInfo | Project, item_index: int) -> int:
    """How many answers (positive or negative) the item needs in the project."""
    if project.labels_per_item > 1 and in_overlap(project.seed, project.overlap_share, item_index):
        return int(project.labels_per_item)
    return 1


def _project_query() -> Any:
    return select(Project, Dataset.name.label("dataset_name")).join(Dataset, Dataset.id == Project.dataset_id)


def _project_info(row: Any) -> ProjectInfo:
    p: Project = row.Project
    return ProjectInfo(
        id=p.id, name=p.name, dataset_id=p.dataset_id, dataset_name=row.dataset_name, strategy=p.strategy,
        solver=p.solver, params=dict(p.params or {}), seed=p.seed, labels_per_item=p.labels_per_item,
        overlap_share=float(p.overlap_share), reservation_seconds=p.reservation_seconds, status=p.status,
        revision=p.revision, edits=p.edits, created_at=p.created_at,
    )


def create_project(engine: EngineLike, *, name: str, dataset_id: int, strategy: str, solver: str,
                   params: dict[str, Any] | None = None, seed: int = 0, labels_per_item: int = 1,
                   overlap_share: float = 0.0, reservation_seconds: int = 600,
                   created_by: str | None = None) -> int:
    """Create a project; return its id. ``StorageError`` names what is wrong, and nothing is written."""
    if not isinstance(name, str) or not name.strip():
        raise StorageError("A project needs a non-empty name.")
    name = storable_text(name.strip(), "The project name", max_length=text_length(Project.__table__.c.name),
                         error=StorageError)
    strategy, solver = _non_empty(strategy, "strategy"), _non_empty(solver, "solver")
    params_json = _jsonable(params or {}, "params")
    if params_json.get("find") is not None:
        _find_text(params_json["find"])
    labels_per_item, seed, reservation_seconds = int(labels_per_item), int(seed), int(reservation_seconds)
    overlap_share = float(overlap_share)
    if labels_per_item < 1:
        raise StorageError(f"Answers per item must be at least 1, not {labels_per_item}.")
    if not 0.0 <= overlap_share <= 1.0:
        raise StorageError(f"The share of items answered several times must be from 0 to 1, not {overlap_share}.")
    if reservation_seconds < 1:
        raise StorageError(f"An item must stay reserved at least 1 second, not {reservation_seconds}.")
    try:
        with writing(engine) as session:
            if session.get(Dataset, dataset_id) is None:
                raise NotFoundError(f"Dataset {dataset_id} does not exist.")
            if session.execute(select(Project.id).where(Project.name == name)).first():
                raise StorageError(f"A project named '{name}' exists already.")
            project = Project(
                name=name, dataset_id=dataset_id, strategy=strategy, solver=solver, params=params_json, seed=seed,
                labels_per_item=labels_per_item, overlap_share=overlap_share,
                reservation_seconds=reservation_seconds, status="active", revision=0, edits=0,
                created_by=None if created_by is None else _annotator_id(session, _annotator_name(created_by)),
            )
            session.add(project)
            session.flush()
            return project.id
    except IntegrityError:
        raise StorageError(f"A project named '{name}' exists already.") from None


def get_project(engine: EngineLike, project_id: int) -> ProjectInfo:
    with reading(engine) as session:
        row = session.execute(_project_query().where(Project.id == int(project_id))).first()
    if row is None:
        raise NotFoundError(f"Project {project_id} does not exist.")
    return _project_info(row)


def list_projects(engine: EngineLike, *, member: str | None = None, status: str | None = None) -> list[ProjectInfo]:
    """Projects, newest first; ``member``: only those the annotator of that name belongs to."""
    query = _project_query().order_by(Project.id.desc())
    if member is not None:
        query = query.join(ProjectMember, ProjectMember.project_id == Project.id).join(
            Annotator, Annotator.id == ProjectMember.annotator_id).where(Annotator.name == member.strip())
    if status is not None:
        if status not in PROJECT_STATUSES:
            raise StorageError(f"Project status '{status}' is not one of {', '.join(PROJECT_STATUSES)}.")
        query = query.where(Project.status == status)
    with reading(engine) as session:
        return [_project_info(row) for row in session.execute(query).all()]


def set_project_status(engine: EngineLike, project_id: int, status: str) -> None:
    if status not in PROJECT_STATUSES:
        raise StorageError(f"Project status '{status}' is not one of {', '.join(PROJECT_STATUSES)}.")
    with writing(engine) as session:
        changed = rowcount(session.execute(update(Project).where(Project.id == int(project_id)).values(
            status=status, updated_at=utc_now(), revision=Project.revision + 1)))
    if not changed:
        raise NotFoundError(f"Project {project_id} does not exist.")


def _find_text(find: object) -> str:
    if not isinstance(find, str):
        raise StorageError(f"What to find must be text, not {find!r}.")
    return storable_text(find, "What to find", error=StorageError)


def set_project_find(engine: EngineLike, project_id: int, find: str | None) -> None:
    """Store the project's words for what a Positive answer means (``params["find"]``; None or empty:
    none). The shared model's settings, the revision and the edits stay as they are: the model has
    nothing to learn again."""
    find = None if find is None else _find_text(find)
    with writing(engine) as session:
        project = _locked_project(session, project_id)
        params = {key: value for key, value in (project.params or {}).items() if key != "find"}
        if find:
            params["find"] = find
        project.params = params
        project.updated_at = utc_now()


def add_member(engine: EngineLike, project_id: int, annotator: str) -> int:
    """Make ``annotator`` a member of the project; return the labelling session holding their answers.

    A member added twice keeps the session they have.
    """
    name = _annotator_name(annotator)
    try:
        with writing(engine) as session:
            project = _locked_project(session, project_id)
            annotator_id = _annotator_id(session, name)
            found = session.execute(select(ProjectMember.session_id).where(
                ProjectMember.project_id == project.id, ProjectMember.annotator_id == annotator_id)).scalar()
            if found is not None:
                return found
            labelling_session = LabellingSession(
                dataset_id=project.dataset_id, annotator_id=annotator_id, strategy=project.strategy,
                solver=project.solver, solver_params=dict(project.params or {}), seed=project.seed, status="active")
            session.add(labelling_session)
            session.flush()
            session.add(ProjectMember(project_id=project.id, annotator_id=annotator_id,
                                      session_id=labelling_session.id))
            return labelling_session.id
    except IntegrityError:  # added by another transaction at the same moment
        with reading(engine) as session:
            return session.execute(select(ProjectMember.session_id).join(
                Annotator, Annotator.id == ProjectMember.annotator_id).where(
                ProjectMember.project_id == int(project_id), Annotator.name == name)).scalar_one()


def project_members(engine: EngineLike, project_id: int) -> dict[str, int]:
    """``{annotator name: session id}`` of a project's members."""
    with reading(engine) as session:
        rows = session.execute(
            select(Annotator.name, ProjectMember.session_id)
            .join(Annotator, Annotator.id == ProjectMember.annotator_id)
            .where(ProjectMember.project_id == int(project_id))
            .order_by(Annotator.name)
        ).all()
    return {row.name: row.session_id for row in rows}


def project_session_ids(engine: EngineLike) -> set[int]:
    """The labelling sessions that hold project answers (not sessions of their own)."""
    with reading(engine) as session:
        return set(session.execute(select(ProjectMember.session_id)).scalars())


def project_revision(engine: EngineLike, project_id: int) -> tuple[int, int]:
    """``(revision, edits)`` of a project: one cheap read to learn whether anything changed."""
    with reading(engine) as session:
        row = session.execute(select(Project.revision, Project.edits).where(Project.id == int(project_id))).first()
    if row is None:
        raise NotFoundError(f"Project {project_id} does not exist.")
    return int(row.revision), int(row.edits)


def _answers_query(project_id: int) -> Any:
    return (
        select(Label.id, Item.position, Annotator.name, Label.value, Label.session_id, Label.created_at)
        .join(ProjectMember, ProjectMember.session_id == Label.session_id)
        .join(Item, Item.id == Label.item_id)
        .join(Annotator, Annotator.id == Label.annotator_id)
        .where(ProjectMember.project_id == int(project_id), Label.undone_at.is_(None))
    )


def project_answers(engine: EngineLike, project_id: int, *, after_label_id: int | None = None
                    ) -> tuple[tuple[int, int], list[ProjectAnswer]]:
    """The project's ``(revision, edits)`` and its active answers (after ``after_label_id``), in label order.

    Read in one transaction, so the answers are exactly those of that revision.
    """
    query = _answers_query(project_id)
    if after_label_id is not None:
        query = query.where(Label.id > int(after_label_id))
    with reading(engine) as session:
        row = session.execute(select(Project.revision, Project.edits).where(Project.id == int(project_id))).first()
        if row is None:
            raise NotFoundError(f"Project {project_id} does not exist.")
        rows = session.execute(query.order_by(Label.id)).all()
    answers = [ProjectAnswer(label_id=r.id, item_index=r.position, annotator=r.name, value=int(r.value),
                             session_id=r.session_id, created_at=r.created_at) for r in rows]
    return (int(row.revision), int(row.edits)), answers


def settlements(engine: EngineLike, project_id: int) -> dict[int, Settlement]:
    """``{item index: settled answer}`` of a project."""
    with reading(engine) as session:
        rows = session.execute(
            select(Item.position, Adjudication.value, Annotator.name, Adjudication.note, Adjudication.created_at)
            .join(Item, Item.id == Adjudication.item_id)
            .outerjoin(Annotator, Annotator.id == Adjudication.annotator_id)
            .where(Adjudication.project_id == int(project_id))
        ).all()
    return {r.position: Settlement(r.position, int(r.value), r.name, r.note, r.created_at) for r in rows}


def _locked_project(session: Session, project_id: int) -> Project:
    """The project's row, locked until the transaction ends: the project's changes take turns."""
    project = session.get(Project, int(project_id), with_for_update=True)
    if project is None:
        raise NotFoundError(f"Project {project_id} does not exist.")
    return project


def _member(session: Session, project: Project, annotator: str) -> tuple[int, int]:
    """``(annotator id, session id)`` of a member; ``StorageError`` for someone who is not one."""
    row = session.execute(
        select(ProjectMember.annotator_id, ProjectMember.session_id)
        .join(Annotator, Annotator.id == ProjectMember.annotator_id)
        .where(ProjectMember.project_id == project.id, Annotator.name == annotator)
    ).first()
    if row is None:
        raise StorageError(f"'{annotator}' is not a member of project '{project.name}'.")
    return row.annotator_id, row.session_id


def _bump(session: Session, project: Project, *, edit: bool) -> None:
    now = utc_now()
    values: dict[str, Any] = {"revision": Project.revision + 1, "updated_at": now}
    if edit:
        values["edits"] = Project.edits + 1
    session.execute(update(Project).where(Project.id == project.id).values(**values))


def record_answer(engine: EngineLike, project_id: int, *, annotator: str, item_index: int, value: int,
                  strategy: str, solver: str, decision_value: float | None = None, model_version: int = 0,
                  update_ms: float | None = None, query_ms: float | None = None) -> LabelEvent:
    """Store a member's answer (+1, -1, or 0 to skip) to an item of the project; committed when this returns.

    Refused, with nothing written: an item that already has every answer the project
    asks for (``ItemTakenError``: someone else answered it), an item this member has
    answered (``DuplicateLabelError``), a closed project, someone who is not a member.
    The member's reservation ends with the answer.
    """
    value = _label_value(value)
    item_index = _item_index(item_index)
    annotator = _annotator_name(annotator)
    now = utc_now()
    answer: dict[str, Any] = dict(
        value=value, created_at=now, strategy=_non_empty(strategy, "strategy"), solver=_non_empty(solver, "solver"),
        decision_value=_optional_float(decision_value, "decision_value"), model_version=int(model_version),
        update_ms=_optional_float(update_ms, "update_ms"), query_ms=_optional_float(query_ms, "query_ms"),
    )
    with writing(engine) as session:
        project = _locked_project(session, project_id)
        if project.status != "active":
            raise StorageError(f"Project '{project.name}' is closed; it takes no more answers.")
        annotator_id, session_id = _member(session, project, annotator)
        item_id = _item_id(session, project.dataset_id, item_index)
        mine = session.execute(select(Label.value).where(
            Label.session_id == session_id, Label.item_id == item_id, Label.undone_at.is_(None))).first()
        if mine is not None:
            raise DuplicateLabelError(
                f"Item {item_index} already has your answer in project '{project.name}'; undo it first to change it.",
                session_id=session_id, item_index=item_index, label_id=None)
        given = session.execute(
            select(func.count()).select_from(Label)
            .join(ProjectMember, ProjectMember.session_id == Label.session_id)
            .where(ProjectMember.project_id == project.id, Label.item_id == item_id, Label.undone_at.is_(None),
                   Label.value != 0)
        ).scalar_one()
        if given >= answers_needed(project, item_index):
            raise ItemTakenError(f"Item {item_index} was answered by another annotator meanwhile; nothing was "
                                 "recorded.")
        label_id = session.execute(
            insert(Label).values(session_id=session_id, item_id=item_id, annotator_id=annotator_id, **answer)
            .returning(Label.id)
        ).scalar_one()
        session.execute(delete(ItemReservation).where(
            ItemReservation.project_id == project.id, ItemReservation.annotator_id == annotator_id))
        session.execute(update(LabellingSession).where(LabellingSession.id == session_id).values(updated_at=now))
        _bump(session, project, edit=False)
    return LabelEvent(label_id=label_id, session_id=session_id, item_index=item_index, annotator=annotator, **answer)


def undo_answer(engine: EngineLike, project_id: int, *, annotator: str, label_id: int) -> LabelEvent | None:
    """Undo a member's answer ``label_id`` if it is still their most recent active one; else None, changing nothing."""
    annotator = _annotator_name(annotator)
    with writing(engine) as session:
        project = _locked_project(session, project_id)
        if project.status != "active":
            raise StorageError(f"Project '{project.name}' is closed; its answers stay as they are.")
        _, session_id = _member(session, project, annotator)
        last_id = session.execute(
            select(func.max(Label.id)).where(Label.session_id == session_id, Label.undone_at.is_(None))).scalar()
        if last_id is None or last_id != int(label_id):
            return None
        now = utc_now()
        session.execute(update(Label).where(Label.id == last_id).values(undone_at=now))
        session.execute(update(LabellingSession).where(LabellingSession.id == session_id).values(updated_at=now))
        _bump(session, project, edit=True)
        return _label_event(session.execute(events_query().where(Label.id == last_id)).one())


def settle(engine: EngineLike, project_id: int, *, item_index: int, value: int, settled_by: str,
           note: str = "") -> None:
    """Store (or replace) the settled answer of an item."""
    value = _label_value(value)
    if value == 0:
        raise InvalidLabelError("A settled answer is +1 or -1, not a skip.")
    item_index = _item_index(item_index)
    settled_by = _annotator_name(settled_by)
    note = storable_text(str(note or ""), "The note", error=StorageError)
    with writing(engine) as session:
        project = _locked_project(session, project_id)
        item_id = _item_id(session, project.dataset_id, item_index)
        by = _annotator_id(session, settled_by)
        session.execute(delete(Adjudication).where(Adjudication.project_id == project.id,
                                                   Adjudication.item_id == item_id))
        session.add(Adjudication(project_id=project.id, item_id=item_id, value=value, annotator_id=by, note=note))
        session.flush()
        _bump(session, project, edit=True)


# --------------------------------------------------------------------------- reservations


def reserve_item(engine: EngineLike, project_id: int, *, annotator: str, item_index: int, seconds: int) -> bool:
    """Hand an item to a member until ``seconds`` from now; False when someone else holds it.

    Expired reservations are cleared first; the member's previous reservation ends.
    """
    annotator = _annotator_name(annotator)
    now = utc_now()
    with writing(engine) as session:
        project = session.get(Project, int(project_id))
        if project is None:
            raise NotFoundError(f"Project {project_id} does not exist.")
        annotator_id, _ = _member(session, project, annotator)
        item_id = _item_id(session, project.dataset_id, _item_index(item_index))
        session.execute(delete(ItemReservation).where(
            ItemReservation.project_id == project.id,
            (ItemReservation.expires_at <= now) | (ItemReservation.annotator_id == annotator_id)))
        try:
            with session.begin_nested():
                session.execute(insert(ItemReservation).values(
                    project_id=project.id, item_id=item_id, annotator_id=annotator_id,
                    expires_at=now + dt.timedelta(seconds=int(seconds)), created_at=now))
        except IntegrityError:
            return False
        return True


def reservation_of(engine: EngineLike, project_id: int, annotator: str) -> int | None:
    """The item a member holds (not expired), or None."""
    with reading(engine) as session:
        return session.execute(
            select(Item.position)
            .join(ItemReservation, ItemReservation.item_id == Item.id)
            .join(Annotator, Annotator.id == ItemReservation.annotator_id)
            .where(ItemReservation.project_id == int(project_id), Annotator.name == annotator.strip(),
                   ItemReservation.expires_at > utc_now())
        ).scalar()


def reserved_items(engine: EngineLike, project_id: int, *, except_annotator: str | None = None) -> dict[int, str]:
    """``{item index: holder}`` of the project's reservations that have not expired."""
    query = (
        select(Item.position, Annotator.name)
        .join(ItemReservation, ItemReservation.item_id == Item.id)
        .join(Annotator, Annotator.id == ItemReservation.annotator_id)
        .where(ItemReservation.project_id == int(project_id), ItemReservation.expires_at > utc_now())
    )
    if except_annotator is not None:
        query = query.where(Annotator.name != except_annotator.strip())
    with reading(engine) as session:
        return {row.position: row.name for row in session.execute(query).all()}


def release_reservation(engine: EngineLike, project_id: int, annotator: str) -> None:
    with writing(engine) as session:
        annotator_id = session.execute(select(Annotator.id).where(Annotator.name == annotator.strip())).scalar()
        if annotator_id is not None:
            session.execute(delete(ItemReservation).where(ItemReservation.project_id == int(project_id),
                                                          ItemReservation.annotator_id == annotator_id))


# --------------------------------------------------------------------------- project snapshots


def save_project_snapshot(engine: EngineLike, project_id: int, *, revision: int, edits: int,
                          arrays: dict[str, Any], meta: dict[str, Any] | None = None,
                          keep: int = SNAPSHOTS_KEPT) -> int:
    """Store a project's shared model (plain arrays, as ``repository.save_snapshot``; ``meta`` JSON-able)
    as the project was at ``revision`` / ``edits``; only the ``keep`` most advanced snapshots of the
    project are kept.  Returns the snapshot id."""
    blob = _save_arrays(arrays)
    meta_json = _jsonable(meta or {}, "meta")
    with writing(engine) as session:
        if session.get(Project, int(project_id)) is None:
            raise NotFoundError(f"Project {project_id} does not exist.")
        snapshot = ProjectSnapshot(project_id=int(project_id), revision=int(revision), edits=int(edits),
                                   arrays=blob, meta=meta_json)
        session.add(snapshot)
        session.flush()
        stale = list(session.execute(
            select(ProjectSnapshot.id).where(ProjectSnapshot.project_id == int(project_id))
            .order_by(ProjectSnapshot.revision.desc(), ProjectSnapshot.id.desc()).offset(max(int(keep), 1))
        ).scalars())
        if stale:
            session.execute(delete(ProjectSnapshot).where(ProjectSnapshot.id.in_(stale)))
        return snapshot.id


def latest_project_snapshot(engine: EngineLike, project_id: int) -> ProjectModelSnapshot | None:
    """The project's most advanced stored model whose arrays can be read (never unpickled), or None."""
    with reading(engine) as session:
        candidates = session.execute(
            select(ProjectSnapshot).where(ProjectSnapshot.project_id == int(project_id))
            .order_by(ProjectSnapshot.revision.desc(), ProjectSnapshot.id.desc())
        ).scalars()
        for snapshot in candidates:
            try:
                arrays = _load_arrays(snapshot.arrays)
            except StorageError:
                continue  # not plain arrays: an older snapshot, or learning every answer again, serves
            return ProjectModelSnapshot(revision=snapshot.revision, edits=snapshot.edits, arrays=arrays,
                                        meta=dict(snapshot.meta or {}), created_at=snapshot.created_at)
    return None
