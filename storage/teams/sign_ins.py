"""Browser sign-ins: a ticket redeemed once for a token, ended by signing out or by any change of
the account (only hashes are stored)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from storage.errors import StorageError
from storage.models import (
    Account,
    BrowserSignIn,
    utc_now,
)
from storage.repository.common import EngineLike, reading, writing
from storage.validation import rowcount

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
    return BrowserSignInInfo(
        id=row.id,
        account_id=row.account_id,
        session_epoch=row.session_epoch,
        created_at=row.created_at,
        last_used_at=row.last_used_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        redeemed=row.token_hash is not None,
    )


def _digest(text: str, what: str) -> str:
    """A SHA-256 hex digest as stored (64 characters); ``StorageError`` for anything else."""
    if not isinstance(text, str) or len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise StorageError(f"{what} must be a SHA-256 hex digest.")
    return text


def create_browser_sign_in(
    engine: EngineLike,
    account_id: int,
    *,
    session_epoch: int,
    ticket_hash: str,
    ticket_expires_at: dt.datetime,
    created_at: dt.datetime,
    expires_at: dt.datetime,
) -> int | None:
    """Start a browser sign-in of an account, redeemable once with the ticket whose hash is ``ticket_hash``
    until ``ticket_expires_at``; its id, or None when the account is disabled, gone, or its
    ``session_epoch`` is not ``session_epoch`` any more (checked in the same transaction as the insert).
    Browser sign-ins that ended more than ``BROWSER_SIGN_INS_KEPT`` ago are deleted on the way."""
    ticket_hash = _digest(ticket_hash, "A ticket's hash")
    now = utc_now()
    with writing(engine) as session:
        holds = session.execute(
            select(Account.id).where(
                Account.id == int(account_id),
                Account.session_epoch == int(session_epoch),
                Account.disabled_at.is_(None),
            )
        ).first()
        if holds is None:
            return None
        row = BrowserSignIn(
            account_id=int(account_id),
            session_epoch=int(session_epoch),
            ticket_hash=ticket_hash,
            ticket_expires_at=ticket_expires_at,
            created_at=created_at,
            expires_at=expires_at,
        )
        session.add(row)
        session.flush()
        ended = now - BROWSER_SIGN_INS_KEPT
        session.execute(
            delete(BrowserSignIn).where(or_(BrowserSignIn.expires_at < ended, BrowserSignIn.revoked_at < ended))
        )
        return row.id


def redeem_browser_ticket(
    engine: EngineLike, ticket_hash: str, token_hash: str, *, now: dt.datetime
) -> BrowserSignInInfo | None:
    """Exchange a ticket for a token, once: the browser sign-in whose ticket hashes to ``ticket_hash`` now
    answers to the token hashing to ``token_hash``, and the ticket is gone. None (nothing changed) when
    no such ticket is waiting: unknown, used, expired, or its sign-in ended (revoked, expired, the account
    disabled or changed). A conditional update: of two requests with one ticket, one wins."""
    ticket_hash, token_hash = _digest(ticket_hash, "A ticket's hash"), _digest(token_hash, "A token's hash")
    account_holds = (
        select(Account.id)
        .where(
            Account.id == BrowserSignIn.account_id,
            Account.session_epoch == BrowserSignIn.session_epoch,
            Account.disabled_at.is_(None),
        )
        .exists()
    )
    with writing(engine) as session:
        found = session.execute(
            update(BrowserSignIn)
            .where(
                BrowserSignIn.ticket_hash == ticket_hash,
                BrowserSignIn.token_hash.is_(None),
                BrowserSignIn.ticket_expires_at > now,
                BrowserSignIn.expires_at > now,
                BrowserSignIn.revoked_at.is_(None),
                account_holds,
            )
            .values(token_hash=token_hash, ticket_hash=None, ticket_expires_at=None, last_used_at=now)
            .returning(BrowserSignIn.id)
        ).scalar()
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
        rows = (
            session.execute(
                select(BrowserSignIn).where(BrowserSignIn.account_id == int(account_id)).order_by(BrowserSignIn.id)
            )
            .scalars()
            .all()
        )
        return [_browser_sign_in_info(row) for row in rows]


def note_browser_sign_in_used(engine: EngineLike, sign_in_id: int, *, now: dt.datetime) -> None:
    with writing(engine) as session:
        session.execute(update(BrowserSignIn).where(BrowserSignIn.id == int(sign_in_id)).values(last_used_at=now))


def revoke_browser_sign_ins(engine: EngineLike, account_id: int) -> int:
    """End every browser sign-in of an account that has not ended (signing out); how many there were."""
    with writing(engine) as session:
        return _revoke_browser_sign_ins(session, int(account_id), utc_now())


def _revoke_browser_sign_ins(session: Session, account_id: int, now: dt.datetime) -> int:
    return rowcount(
        session.execute(
            update(BrowserSignIn)
            .where(BrowserSignIn.account_id == account_id, BrowserSignIn.revoked_at.is_(None))
            .values(revoked_at=now, ticket_hash=None, ticket_expires_at=None)
        )
    )
