"""Accounts: who may sign in, with which role; the last enabled owner is kept."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from storage.errors import NotFoundError, StorageError
from storage.models import (
    ROLES,
    Account,
    Annotator,
    utc_now,
)
from storage.repository.annotators import _annotator_id, _annotator_name
from storage.repository.common import EngineLike, reading, writing
from storage.teams.sign_ins import _revoke_browser_sign_ins
from storage.validation import rowcount, storable_text


class DuplicateAccountError(StorageError):
    """An account with that name exists already."""


class LastOwnerError(StorageError):
    """The change would leave no enabled owner."""


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


_ACCOUNT_COLUMNS = (Account, Annotator.name)


def _account_info(row: Any) -> AccountInfo:
    account: Account = row.Account
    return AccountInfo(
        id=account.id,
        annotator_id=account.annotator_id,
        name=row.name,
        role=account.role,
        password_hash=account.password_hash,
        session_epoch=account.session_epoch,
        failed_attempts=account.failed_attempts,
        disabled=account.disabled_at is not None,
        last_sign_in_at=account.last_sign_in_at,
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
            session.add(
                Account(
                    annotator_id=annotator_id,
                    role=role,
                    password_hash=password_hash,
                    session_epoch=0,
                    failed_attempts=0,
                )
            )
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
    values: dict[str, Any] = (
        dict(failed_attempts=0, last_sign_in_at=utc_now())
        if succeeded
        else dict(failed_attempts=Account.failed_attempts + 1)
    )
    with writing(engine) as session:
        count = session.execute(
            update(Account).where(Account.id == int(account_id)).values(**values).returning(Account.failed_attempts)
        ).scalar()
    if count is None:
        raise NotFoundError(f"Account {account_id} does not exist.")
    return count


def set_password_hash(engine: EngineLike, account_id: int, password_hash: str) -> None:
    """Store a new password hash; every sign-in made before ends (``session_epoch`` changes)."""
    password_hash = storable_text(password_hash, "The password hash", max_length=255, error=StorageError)
    _update_account(
        engine, account_id, password_hash=password_hash, failed_attempts=0, session_epoch=Account.session_epoch + 1
    )


def set_account_disabled(engine: EngineLike, account_id: int, disabled: bool) -> None:
    """Disable (every sign-in ends) or enable an account; ``LastOwnerError`` for the last enabled owner."""
    _update_account(
        engine, account_id, disabled_at=utc_now() if disabled else None, session_epoch=Account.session_epoch + 1
    )


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
        if (
            int(account_id) in owners
            and session.execute(select(func.count()).select_from(_enabled_owners().subquery())).scalar_one() == 0
        ):
            raise LastOwnerError("The last owner cannot be disabled or given another role.")  # (rolled back)
