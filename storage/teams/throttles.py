"""Sign-in throttles: attempts counted per key before the password is checked, and the locks they set."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping

from sqlalchemy import case, delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from storage.errors import StorageError
from storage.models import (
    SignInThrottle,
)
from storage.repository.common import EngineLike, writing


class SignInLockedError(StorageError):
    """Sign-ins under a key are locked until ``until``."""

    def __init__(self, until: dt.datetime | None):
        super().__init__(
            f"Sign-ins are locked until {until:%Y-%m-%d %H:%M:%S} UTC."
            if until is not None
            else "Sign-ins are locked for now."
        )
        self.until = until


def charge_sign_in(
    engine: EngineLike, locks: Mapping[str, Callable[[int], float]], *, now: dt.datetime, forget_before: dt.datetime
) -> dt.datetime | None:
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
                update(SignInThrottle)
                .where(SignInThrottle.key == key, fresh)
                .values(
                    failures=case((SignInThrottle.updated_at < forget_before, 1), else_=SignInThrottle.failures + 1),
                    updated_at=now,
                )
                .returning(SignInThrottle.failures)
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
                session.execute(
                    update(SignInThrottle)
                    .where(SignInThrottle.key == key, SignInThrottle.failures > 0)
                    .values(failures=SignInThrottle.failures - 1)
                )


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
        stale = list(
            session.execute(
                select(SignInThrottle.key)
                .where(
                    SignInThrottle.updated_at < forget_before,
                    or_(SignInThrottle.locked_until.is_(None), SignInThrottle.locked_until <= now),
                )
                .limit(1000)
                .with_for_update(skip_locked=True)
            ).scalars()
        )
        if stale:
            session.execute(delete(SignInThrottle).where(SignInThrottle.key.in_(stale)))
