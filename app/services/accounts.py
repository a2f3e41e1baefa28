"""Accounts: who may sign in, with which role, and the first owner of a new installation.

Passwords are hashed with argon2id (``argon2-cffi``, its default parameters:
RFC 9106's second recommendation, 64 MiB and 3 passes); only the hash is
stored.

Guessing passwords. Failed sign-ins are counted in the database under two keys
(``storage.teams.charge_sign_in``): the name from one client (its address), and
the client under any name. After ``FREE_ATTEMPTS`` failures in a row for one
name from one client, that name is locked *for that client* for a time that
doubles with each further failure, up to ``LOCK_MAX_S``; a client that fails
``CLIENT_FREE_ATTEMPTS`` times in a row, whatever the names, is locked the same
way. An attacker can thus lock out only themselves: the owner signs in from
elsewhere. The client is the connection's address; for a connection from this
machine (a reverse proxy in front of the app) it is the address the proxy put
last in ``X-Forwarded-For`` (``client_of``). An
attempt is counted before its password is checked, in a conditional update that
only a key that is not locked passes, and the lock is set in the same
transaction; so parallel guesses take turns on the count, and no more than
``FREE_ATTEMPTS`` of them are ever checked before the lock.

A password check runs argon2id, which holds 64 MiB while it runs: a process runs
at most ``VERIFY_AT_ONCE`` checks at a time, ``VERIFY_PER_NAME`` for one name and
``VERIFY_PER_CLIENT`` for one client (``Verifications``); others wait their turn.
Every failure answers after ``FAILURE_DELAY_S``.

Names that have no account go through the same counting, the same lock and the
same check (against a dummy hash), with the same messages: an answer does not
tell whether a name exists.

Every action that writes checks its identity against the database first
(``sign_in_ended``): a disabled account, or one whose password or role changed,
writes nothing more, whatever page it still has open.

A sign-in lasts for the browser (``app.auth`` says how and why): ``begin_browser_sign_in``
binds an identity to a new browser sign-in and makes a one-time ticket, ``redeem_browser_ticket``
exchanges the ticket once for the random token of the browser's cookie, ``browser_identity``
finds the identity of a token, and ``sign_out`` revokes every browser sign-in of the account.
The database holds the SHA-256 of tokens and tickets only (``storage.teams``, ``browser_sign_ins``).
A browser sign-in ends when the identity would (``still_valid``), or when it is revoked.

A fresh installation has no account: the first start creates the owner
(``MARGINLAB_OWNER_NAME``, default "owner") with the password in
``MARGINLAB_OWNER_PASSWORD``, or, when that is not set, a random password
printed once to the server's console.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import ipaddress
import logging
import os
import secrets
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from app.services.common import ServiceError
from app.services.errors import service_boundary
from storage import teams
from storage.models import ROLES, utc_now

logger = logging.getLogger(__name__)

OWNER_NAME_ENV = "MARGINLAB_OWNER_NAME"
OWNER_PASSWORD_ENV = "MARGINLAB_OWNER_PASSWORD"
DEFAULT_OWNER_NAME = "owner"
#: shortest password an account may have
MIN_PASSWORD_LENGTH = 8
#: failures in a row for one name from one client before that name is locked for that client
FREE_ATTEMPTS = 5
#: failures in a row from one client, whatever the names, before the client is locked
CLIENT_FREE_ATTEMPTS = 20
#: the first lock lasts this long; each further failure doubles it, up to LOCK_MAX_S
LOCK_FIRST_S = 30.0
LOCK_MAX_S = 15 * 60.0
#: failures are forgotten after this long without an attempt
FORGET_AFTER = dt.timedelta(days=1)
#: every failed sign-in answers after this pause
FAILURE_DELAY_S = 0.5
#: password checks (64 MiB each) a process runs at once: in all, for one name, for one client
VERIFY_AT_ONCE = 4
VERIFY_PER_NAME = 1
VERIFY_PER_CLIENT = 2
#: how long a sign-in waits for its turn to be checked before it is refused as too busy
VERIFY_WAIT_S = 10.0
#: a sign-in holds for this long, at most
SIGN_IN_HOURS = 12
#: seconds within which a signed-in page hands its one-time ticket to the server for the browser's cookie
TICKET_SECONDS = 120
#: a browser sign-in's "last used" is written at most this often (not at every page run)
LAST_USED_EVERY = dt.timedelta(minutes=5)
#: the longest token or ticket looked up (``secrets.token_urlsafe(32)`` gives 43 characters)
_SECRET_MAX_LENGTH = 128
#: the client of a sign-in whose address is not known (tests, a local connection)
UNKNOWN_CLIENT = "unknown"

_hasher = PasswordHasher()
#: checked for names without an account, so that a wrong name takes as long as a wrong password
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))

SIGN_IN_ENDED = (
    "Your sign-in has ended (it expired, you signed out in another tab, or your account was disabled, "
    "or its password or role changed): nothing was recorded. Sign in again."
)


class SignInError(ServiceError):
    """A sign-in that did not succeed; the message says only what the person may know."""


class SignedOutError(ServiceError):
    """An action by an identity whose sign-in no longer holds; nothing was done."""


@dataclass(frozen=True)
class Identity:
    """Who is signed in (kept per browser session; checked against the database on every page)."""

    account_id: int
    name: str
    role: str
    epoch: int
    signed_in_at: dt.datetime
    via: str = "password"  # or "oidc"
    #: the browser sign-in it belongs to (``browser_sign_ins.id``), None for one held by its tab alone
    browser_sign_in: int | None = None

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"


@dataclass(frozen=True)
class BrowserCookie:
    """What the server sends a browser for its sign-in: the token (only its hash is stored) and until when."""

    token: str
    expires_at: dt.datetime

    def max_age(self, now: dt.datetime | None = None) -> int:
        """Seconds the cookie should live (at least 0)."""
        return max(int((self.expires_at - (now or utc_now())).total_seconds()), 0)


def secret_digest(secret: str) -> str:
    """The SHA-256 hex digest a token or ticket is stored and looked up under (it is random and 256 bits
    long: no salt or slow hash is needed for it, unlike a password)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _looks_like_a_secret(secret: object) -> bool:
    return isinstance(secret, str) and 0 < len(secret) <= _SECRET_MAX_LENGTH and secret.isascii()


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


def lock_seconds(failures: int, free: int = FREE_ATTEMPTS) -> float:
    """How long a key stays locked after ``failures`` failed sign-ins in a row (0: not locked)."""
    if failures < free:
        return 0.0
    return min(LOCK_FIRST_S * 2.0 ** (failures - free), LOCK_MAX_S)


def client_of(peer: str | None, forwarded_for: str | None) -> str | None:
    """The address a sign-in comes from: ``peer`` (the connection's, None when it comes from this
    machine); for a connection from this machine, the last address of ``X-Forwarded-For`` (the one a
    reverse proxy in front of the app added: the entries before it are the browser's to make up)."""
    if peer:
        return peer
    last = str(forwarded_for or "").split(",")[-1].strip()
    try:
        return str(ipaddress.ip_address(last))
    except ValueError:
        return None


def throttle_keys(name: str, client: str) -> tuple[str, str]:
    """The keys a sign-in is counted under: (the name from this client, this client under any name)."""

    def digest(*parts: str) -> str:
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    return "name:" + digest(name.casefold(), client), "client:" + digest(client)


def _try_again(wait: dt.timedelta) -> str:
    return f"Too many failed sign-ins: try again in {max(int(wait.total_seconds()), 1)} seconds."


class Verifications:
    """Turns for password checks in this process: at most ``per_name`` at once for one name,
    ``per_client`` for one client and ``at_once`` in all (each argon2id check holds 64 MiB)."""

    def __init__(
        self, *, at_once: int = VERIFY_AT_ONCE, per_name: int = VERIFY_PER_NAME, per_client: int = VERIFY_PER_CLIENT
    ):
        self.at_once, self.per_name, self.per_client = at_once, per_name, per_client
        self._changed = threading.Condition()
        self._names: Counter[str] = Counter()
        self._clients: Counter[str] = Counter()
        self._running = 0

    @contextmanager
    def turn(self, name: str, client: str, wait_s: float) -> Iterator[None]:
        """Hold a turn while the block runs; ``SignInError`` when none comes within ``wait_s``."""
        name = name.casefold()

        def free() -> bool:
            return (
                self._running < self.at_once
                and self._names[name] < self.per_name
                and self._clients[client] < self.per_client
            )

        with self._changed:
            if not self._changed.wait_for(free, timeout=wait_s):
                raise SignInError("Too many sign-ins at once: try again in a moment.")
            self._running += 1
            self._names[name] += 1
            self._clients[client] += 1
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                for counts, key in ((self._names, name), (self._clients, client)):
                    counts[key] -= 1
                    if counts[key] <= 0:
                        del counts[key]
                self._changed.notify_all()


#: the process's turns for password checks (one for every service of the process: it bounds its memory)
VERIFICATIONS = Verifications()


@service_boundary
class Accounts:
    """Who may sign in, and whether a signed-in person may still act: ``MarginLab.accounts``
    (``accounts()`` lists the accounts)."""

    #: seconds a failed sign-in waits before answering (tests may shorten it)
    failure_delay_s: float = FAILURE_DELAY_S
    #: seconds a sign-in waits for its turn to be checked
    verify_wait_s: float = VERIFY_WAIT_S
    verifications: Verifications = VERIFICATIONS

    def __init__(self, engine):
        self.engine = engine

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
                raise ServiceError(
                    f"The account '{name}' is disabled and no other owner exists; set "
                    f"{OWNER_NAME_ENV} to another name to create a new owner."
                )
        except teams.DuplicateAccountError:
            return None  # another process created it at the same moment
        if given:
            logger.warning(
                "MarginLab: created the owner account '%s' with the password from %s.", name, OWNER_PASSWORD_ENV
            )
            return None
        print(
            f"\nMarginLab: created the owner account '{name}'. Its password (shown only this once): {password}\n"
            f"Sign in and change it on the My labels page (Change my password), or set {OWNER_PASSWORD_ENV} "
            "before the first start.\n",
            file=sys.stderr,
            flush=True,
        )
        return password

    def nobody_signed_in_yet(self) -> bool:
        """True until the first sign-in of any account (the sign-in page then says how the owner gets in)."""
        return all(a.last_sign_in_at is None for a in teams.list_accounts(self.engine))

    # -- signing in
    def sign_in(self, name: str, password: str, *, client: str | None = None) -> Identity:
        """The identity of ``name`` if ``password`` is theirs; ``SignInError`` otherwise (after a pause).

        ``client``: the address the attempt comes from (failures are counted and locked per
        name and client, and per client).
        """
        name = str(name or "").strip()
        password = str(password or "")
        if not name or not password:
            raise SignInError("Enter your name and password.")
        client = str(client or UNKNOWN_CLIENT)[:64]
        now = utc_now()
        for_name, for_client = throttle_keys(name, client)
        try:
            locked_until = teams.charge_sign_in(
                self.engine,
                {for_name: lock_seconds, for_client: functools.partial(lock_seconds, free=CLIENT_FREE_ATTEMPTS)},
                now=now,
                forget_before=now - FORGET_AFTER,
            )
        except teams.SignInLockedError as locked:
            raise SignInError(_try_again(locked.until - now)) from None
        account = teams.get_account(self.engine, name)
        known = account is not None and account.password_hash is not None
        with self.verifications.turn(name, client, self.verify_wait_s):
            right = _verified(account.password_hash if known else _DUMMY_HASH, password) and known
        if not right:
            if known:
                teams.record_sign_in(self.engine, account.id, succeeded=False)
            time.sleep(self.failure_delay_s)
            if locked_until is not None:
                raise SignInError(f"Wrong name or password. {_try_again(locked_until - now)}")
            raise SignInError("Wrong name or password.")
        teams.clear_sign_in(self.engine, starts_over=for_name, refunded=for_client)
        if account.disabled:
            time.sleep(self.failure_delay_s)
            raise SignInError("This account is disabled; ask an owner of this MarginLab.")
        teams.record_sign_in(self.engine, account.id, succeeded=True)
        if _hasher.check_needs_rehash(account.password_hash):
            teams.set_password_hash(self.engine, account.id, hash_password(password))
            account = teams.get_account_by_id(self.engine, account.id)
        return Identity(account.id, account.name, account.role, account.session_epoch, now)

    def sign_in_external(self, email: str) -> Identity:
        """The identity of an account named like the e-mail address an identity provider (OIDC) vouched for."""
        account = teams.get_account(self.engine, str(email or ""))
        if account is None or account.disabled:
            raise SignInError(f"No MarginLab account is named {email!r}: ask an owner to add it on the Team page.")
        teams.record_sign_in(self.engine, account.id, succeeded=True)
        return Identity(account.id, account.name, account.role, account.session_epoch, utc_now(), via="oidc")

    def sign_in_ended(self, identity: Identity | None) -> str | None:
        """Why ``identity`` may not write any more (``SIGN_IN_ENDED``: see ``still_valid``), or None when
        it may, or when no identity is given (a caller that is not a signed-in person: a script, a test).
        Every action that writes asks this first, against the database."""
        return None if identity is None or self.still_valid(identity) is not None else SIGN_IN_ENDED

    def acting(self, identity: Identity | None) -> None:
        """``SignedOutError`` when ``identity``'s sign-in has ended (``sign_in_ended``); nothing otherwise."""
        if ended := self.sign_in_ended(identity):
            raise SignedOutError(ended)

    def require_owner(self, actor: Identity | None, what: str) -> None:
        """Nothing when ``actor`` is an owner whose sign-in holds; ``ServiceError`` otherwise."""
        if actor is None or not actor.is_owner:
            raise ServiceError(f"Only an owner can {what}.")
        self.acting(actor)

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
        if (
            account is None
            or account.disabled
            or account.session_epoch != identity.epoch
            or account.name != identity.name
        ):
            return None
        if identity.browser_sign_in is not None:  # signed out (in any tab), or revoked with the account's change
            kept = teams.get_browser_sign_in(self.engine, identity.browser_sign_in)
            if (
                kept is None
                or kept.revoked_at is not None
                or kept.expires_at <= utc_now()
                or kept.account_id != identity.account_id
            ):
                return None
        return identity

    # -- a sign-in kept by the browser
    def begin_browser_sign_in(self, identity: Identity) -> tuple[Identity, str]:
        """Make ``identity``'s sign-in one the browser keeps: the identity bound to a new browser sign-in
        (signing out anywhere, or a change of the account, ends it), and a one-time ticket, valid for
        ``TICKET_SECONDS``, that the page hands to the server (``redeem_browser_ticket``) for the
        browser's cookie. The sign-in ends when ``identity``'s would (``SIGN_IN_HOURS`` after it began).
        ``SignedOutError`` when ``identity``'s sign-in has ended already."""
        if identity is None or self.still_valid(identity) is None:
            raise SignedOutError(SIGN_IN_ENDED)
        ticket = secrets.token_urlsafe(32)
        sign_in_id = teams.create_browser_sign_in(
            self.engine,
            identity.account_id,
            session_epoch=identity.epoch,
            ticket_hash=secret_digest(ticket),
            ticket_expires_at=utc_now() + dt.timedelta(seconds=TICKET_SECONDS),
            created_at=identity.signed_in_at,
            expires_at=identity.signed_in_at + dt.timedelta(hours=SIGN_IN_HOURS),
        )
        if sign_in_id is None:  # (the account changed in between)
            raise SignedOutError(SIGN_IN_ENDED)
        return replace(identity, browser_sign_in=sign_in_id), ticket

    def redeem_browser_ticket(self, ticket: str) -> BrowserCookie | None:
        """The cookie for a ticket from ``begin_browser_sign_in``, once: a new random token, of which only
        the hash is stored. None for a ticket that is unknown, used, expired, or whose sign-in ended."""
        if not _looks_like_a_secret(ticket):
            return None
        token = secrets.token_urlsafe(32)
        kept = teams.redeem_browser_ticket(self.engine, secret_digest(ticket), secret_digest(token), now=utc_now())
        return None if kept is None else BrowserCookie(token, kept.expires_at)

    def browser_identity(self, token: str | None) -> Identity | None:
        """The identity signed in in the browser that sent ``token`` (its cookie), as the database has it
        now; None when the token is unknown or its sign-in ended (see ``still_valid``)."""
        if not _looks_like_a_secret(token):
            return None
        kept = teams.find_browser_sign_in(self.engine, secret_digest(token))
        if kept is None or kept.revoked_at is not None:
            return None
        account = teams.get_account_by_id(self.engine, kept.account_id)
        if account is None:
            return None
        found = self.still_valid(
            Identity(
                account.id, account.name, account.role, kept.session_epoch, kept.created_at, browser_sign_in=kept.id
            )
        )
        now = utc_now()
        if found is not None and (kept.last_used_at is None or now - kept.last_used_at > LAST_USED_EVERY):
            teams.note_browser_sign_in_used(self.engine, kept.id, now=now)
        return found

    def sign_out(self, identity: Identity | None) -> int:
        """End ``identity``'s account's sign-ins everywhere: every browser sign-in of the account is revoked,
        so every tab and browser that used one is signed out at its next page run, and its cookie, sent
        again, finds nothing. How many were revoked. (An ended sign-in may sign out too.)"""
        if identity is None:
            return 0
        return teams.revoke_browser_sign_ins(self.engine, identity.account_id)

    # -- members (owners only)
    def __call__(self) -> list[teams.AccountInfo]:
        """Every account."""
        return teams.list_accounts(self.engine)

    def create_account(
        self, actor: Identity, *, name: str, password: str | None, role: str = "annotator"
    ) -> teams.AccountInfo:
        """An owner adds an account. ``password`` None: the account signs in through the identity provider only."""
        self.require_owner(actor, "add accounts")
        if role not in ROLES:
            raise ServiceError(f"A role is one of {', '.join(ROLES)}, not {role!r}.")
        name = str(name or "").strip()
        if not name:
            raise ServiceError("Enter the new account's name.")
        hashed = None if password is None else hash_password(check_password(password, name=name))
        return teams.create_account(self.engine, name=name, role=role, password_hash=hashed)  # (a name taken: said)

    def change_password(
        self, actor: Identity, account_name: str, password: str, *, current_password: str | None = None
    ) -> None:
        """Set a password: one's own (with the current one), or anyone's as an owner. Other sign-ins end."""
        self.acting(actor)
        account = teams.get_account(self.engine, account_name)
        if account is None:
            raise ServiceError(f"No account is named '{account_name}'.")
        if account.id != actor.account_id:
            self.require_owner(actor, "change another account's password")
        else:
            with self.verifications.turn(account.name, UNKNOWN_CLIENT, self.verify_wait_s):
                right = _verified(account.password_hash or _DUMMY_HASH, str(current_password or ""))
            if not right:
                time.sleep(self.failure_delay_s)
                raise ServiceError("The current password is wrong; nothing was changed.")
        teams.set_password_hash(self.engine, account.id, hash_password(check_password(password, name=account.name)))

    def set_disabled(self, actor: Identity, account_name: str, disabled: bool) -> None:
        """Disable or enable an account; the last enabled owner stays (checked in the same transaction
        as the change, so two owners disabling each other at once leave one)."""
        self.require_owner(actor, "disable accounts")
        account = teams.get_account(self.engine, account_name)
        if account is None:
            raise ServiceError(f"No account is named '{account_name}'.")
        try:
            teams.set_account_disabled(self.engine, account.id, disabled)
        except teams.LastOwnerError:
            raise ServiceError("The last owner cannot be disabled.") from None


def _verified(password_hash: str, password: str) -> bool:
    """Whether ``password`` is the one ``password_hash`` was made from (argon2id: 64 MiB while it runs)."""
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False
