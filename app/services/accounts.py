"""Accounts: who may sign in, with which role, and the first owner of a new installation.

Passwords are hashed with argon2id (``argon2-cffi``, its default parameters:
RFC 9106's second recommendation, 64 MiB and 3 passes); only the hash is
stored. A failed sign-in costs time: every failure waits ``FAILURE_DELAY_S``
before it answers, and after ``FREE_ATTEMPTS`` failures in a row an account is
locked for a time that doubles with each further failure, up to
``LOCK_MAX_S``. Names that have no account are throttled the same way in the
process's memory, and are checked against a dummy hash, so an answer does not
tell whether the name exists.

A fresh installation has no account: the first start creates the owner
(``MARGINLAB_OWNER_NAME``, default "owner") with the password in
``MARGINLAB_OWNER_PASSWORD``, or, when that is not set, a random password
printed once to the server's console.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
import sys
import threading
import time
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from app.services.common import ServiceError
from storage import teams
from storage.models import ROLES, utc_now

logger = logging.getLogger(__name__)

OWNER_NAME_ENV = "MARGINLAB_OWNER_NAME"
OWNER_PASSWORD_ENV = "MARGINLAB_OWNER_PASSWORD"
DEFAULT_OWNER_NAME = "owner"
#: shortest password an account may have
MIN_PASSWORD_LENGTH = 8
#: failures in a row before an account is locked
FREE_ATTEMPTS = 5
#: the first lock lasts this long; each further failure doubles it, up to LOCK_MAX_S
LOCK_FIRST_S = 30.0
LOCK_MAX_S = 15 * 60.0
#: every failed sign-in answers after this pause
FAILURE_DELAY_S = 0.5
#: a sign-in holds for this long, at most
SIGN_IN_HOURS = 12

_hasher = PasswordHasher()
#: checked for names without an account, so that a wrong name takes as long as a wrong password
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))


class SignInError(ServiceError):
    """A sign-in that did not succeed; the message says only what the person may know."""


@dataclass(frozen=True)
class Identity:
    """Who is signed in (kept per browser session; checked against the database on every page)."""

    account_id: int
    name: str
    role: str
    epoch: int
    signed_in_at: dt.datetime
    via: str = "password"  # or "oidc"

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def check_password(password: str, *, name: str | None = None) -> str:
    """The password if it may be used, else ``ServiceError`` saying why."""
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
        raise ServiceError(f"A password needs at least {MIN_PASSWORD_LENGTH} characters.")
    if "\x00" in password:
        raise ServiceError("A password cannot contain a NUL character.")
    if name is not None and password.strip().lower() == name.strip().lower():
        raise ServiceError("A password must not be the account's name.")
    return password


def lock_seconds(failures: int) -> float:
    """How long an account stays locked after ``failures`` failed sign-ins in a row (0: not locked)."""
    if failures < FREE_ATTEMPTS:
        return 0.0
    return min(LOCK_FIRST_S * 2.0 ** (failures - FREE_ATTEMPTS), LOCK_MAX_S)


class Accounts:
    """The account part of ``MarginLab``."""

    _unknown_failures: dict[str, tuple[int, float]]
    _unknown_lock: threading.Lock
    #: seconds a failed sign-in waits before answering (tests may shorten it)
    failure_delay_s: float = FAILURE_DELAY_S

    def _failures_by_name(self) -> dict[str, tuple[int, float]]:
        if not hasattr(self, "_unknown_failures"):
            self._unknown_failures, self._unknown_lock = {}, threading.Lock()
        return self._unknown_failures

    # -- the first start
    def ensure_owner(self) -> str | None:
        """Create the owner account when the database has none; return the password when it was generated.

        The password is ``$MARGINLAB_OWNER_PASSWORD`` when set; otherwise a random one is
        printed once to the server's console (standard error) and returned.
        """
        if teams.count_owners(self.engine) > 0:
            return None
        name = os.environ.get(OWNER_NAME_ENV, "").strip() or DEFAULT_OWNER_NAME
        given = os.environ.get(OWNER_PASSWORD_ENV, "")
        password = check_password(given, name=name) if given else secrets.token_urlsafe(12)
        try:
            existing = teams.get_account(self.engine, name)
            if existing is None:
                teams.create_account(self.engine, name=name, role="owner", password_hash=hash_password(password))
            elif not existing.disabled:
                return None  # an account of that name exists: it is not replaced
            else:
                raise ServiceError(f"The account '{name}' is disabled and no other owner exists; set "
                                   f"{OWNER_NAME_ENV} to another name to create a new owner.")
        except teams.DuplicateAccountError:
            return None  # another process created it at the same moment
        if given:
            logger.warning("MarginLab: created the owner account '%s' with the password from %s.", name,
                           OWNER_PASSWORD_ENV)
            return None
        print(f"\nMarginLab: created the owner account '{name}'. Its password (shown only this once): {password}\n"
              f"Sign in and change it on the Team page, or set {OWNER_PASSWORD_ENV} before the first start.\n",
              file=sys.stderr, flush=True)
        return password

    def nobody_signed_in_yet(self) -> bool:
        """True until the first sign-in of any account (the sign-in page then says how the owner gets in)."""
        return all(a.last_sign_in_at is None for a in teams.list_accounts(self.engine))

    # -- signing in
    def sign_in(self, name: str, password: str) -> Identity:
        """The identity of ``name`` if ``password`` is theirs; ``SignInError`` otherwise (after a pause)."""
        name = str(name or "").strip()
        password = str(password or "")
        if not name or not password:
            raise SignInError("Enter your name and password.")
        account = teams.get_account(self.engine, name)
        now = utc_now()
        if account is None or account.password_hash is None:
            self._fail_unknown(name, password)
        if account.locked_until is not None and account.locked_until > now:
            wait = (account.locked_until - now).total_seconds()
            raise SignInError(f"Too many failed sign-ins: try again in {int(wait) + 1} seconds.")
        try:
            _hasher.verify(account.password_hash, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            failures = account.failed_attempts + 1
            locked = lock_seconds(failures)
            teams.record_sign_in(self.engine, account.id, succeeded=False,
                                 locked_until=now + dt.timedelta(seconds=locked) if locked else None)
            time.sleep(self.failure_delay_s)
            if locked:
                raise SignInError(f"Wrong name or password. Too many failed sign-ins: try again in "
                                  f"{int(locked)} seconds.") from None
            raise SignInError("Wrong name or password.") from None
        if account.disabled:
            time.sleep(self.failure_delay_s)
            raise SignInError("This account is disabled; ask an owner of this MarginLab.")
        teams.record_sign_in(self.engine, account.id, succeeded=True)
        if _hasher.check_needs_rehash(account.password_hash):
            teams.set_password_hash(self.engine, account.id, hash_password(password))
            account = teams.get_account_by_id(self.engine, account.id)
        return Identity(account.id, account.name, account.role, account.session_epoch, now)

    def _fail_unknown(self, name: str, password: str):
        """A name without an account: as slow as a wrong password, throttled per name in memory."""
        failures = self._failures_by_name()
        with self._unknown_lock:
            count, until = failures.get(name.lower(), (0, 0.0))
            if until > time.monotonic():
                raise SignInError(f"Too many failed sign-ins: try again in {int(until - time.monotonic()) + 1} "
                                  "seconds.")
            count += 1
            locked = lock_seconds(count)
            failures[name.lower()] = (count, time.monotonic() + locked if locked else 0.0)
            if len(failures) > 10_000:  # a flood of names: forget the oldest
                for key in list(failures)[:5_000]:
                    failures.pop(key, None)
        try:
            _hasher.verify(_DUMMY_HASH, password)
        except VerificationError:
            pass
        time.sleep(self.failure_delay_s)
        raise SignInError("Wrong name or password.")

    def sign_in_external(self, email: str) -> Identity:
        """The identity of an account named like the e-mail address an identity provider (OIDC) vouched for."""
        account = teams.get_account(self.engine, str(email or ""))
        if account is None or account.disabled:
            raise SignInError(f"No MarginLab account is named {email!r}: ask an owner to add it on the Team page.")
        teams.record_sign_in(self.engine, account.id, succeeded=True)
        return Identity(account.id, account.name, account.role, account.session_epoch, utc_now(), via="oidc")

    def still_valid(self, identity: Identity | None) -> Identity | None:
        """The identity as the database has it now, or None when the sign-in no longer holds.

        It ends after ``SIGN_IN_HOURS``, when the account is disabled, or when its password
        or role changed since.
        """
        if identity is None:
            return None
        if utc_now() - identity.signed_in_at > dt.timedelta(hours=SIGN_IN_HOURS):
            return None
        account = teams.get_account_by_id(self.engine, identity.account_id)
        if account is None or account.disabled or account.session_epoch != identity.epoch \
                or account.name != identity.name:
            return None
        return identity

    # -- members (owners only)
    def accounts(self) -> list[teams.AccountInfo]:
        return teams.list_accounts(self.engine)

    def create_account(self, actor: Identity, *, name: str, password: str | None, role: str = "annotator"
                       ) -> teams.AccountInfo:
        """An owner adds an account. ``password`` None: the account signs in through the identity provider only."""
        _require_owner(actor, "add accounts")
        if role not in ROLES:
            raise ServiceError(f"A role is one of {', '.join(ROLES)}, not {role!r}.")
        name = str(name or "").strip()
        if not name:
            raise ServiceError("Enter the new account's name.")
        hashed = None if password is None else hash_password(check_password(password, name=name))
        try:
            return teams.create_account(self.engine, name=name, role=role, password_hash=hashed)
        except teams.DuplicateAccountError as error:
            raise ServiceError(str(error)) from None

    def change_password(self, actor: Identity, account_name: str, password: str, *,
                        current_password: str | None = None) -> None:
        """Set a password: one's own (with the current one), or anyone's as an owner. Other sign-ins end."""
        account = teams.get_account(self.engine, account_name)
        if account is None:
            raise ServiceError(f"No account is named '{account_name}'.")
        if account.id != actor.account_id:
            _require_owner(actor, "change another account's password")
        else:
            try:
                _hasher.verify(account.password_hash or _DUMMY_HASH, str(current_password or ""))
            except VerificationError:
                time.sleep(self.failure_delay_s)
                raise ServiceError("The current password is wrong; nothing was changed.") from None
        teams.set_password_hash(self.engine, account.id, hash_password(check_password(password, name=account.name)))

    def set_disabled(self, actor: Identity, account_name: str, disabled: bool) -> None:
        _require_owner(actor, "disable accounts")
        account = teams.get_account(self.engine, account_name)
        if account is None:
            raise ServiceError(f"No account is named '{account_name}'.")
        if disabled and account.role == "owner" and teams.count_owners(self.engine) <= 1:
            raise ServiceError("The last owner cannot be disabled.")
        teams.set_account_disabled(self.engine, account.id, disabled)


def _require_owner(actor: Identity | None, what: str) -> None:
    if actor is None or not actor.is_owner:
        raise ServiceError(f"Only an owner can {what}.")
