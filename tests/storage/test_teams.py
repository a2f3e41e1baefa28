"""Teams: accounts and sign-in, projects shared by several annotators, agreement and settling.

Storage and service tests run on a SQLite file and on the throwaway PostgreSQL server
(``engine`` fixture of conftest.py); agreement is checked against scikit-learn's
``cohen_kappa_score`` and hand-computed values of Fleiss' kappa.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import random
import threading
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from app.services import MarginLab, ServiceError, accounts
from app.services.accounts import (
    CLIENT_FREE_ATTEMPTS,
    FREE_ATTEMPTS,
    SIGN_IN_ENDED,
    SignedOutError,
    SignInError,
    Verifications,
    hash_password,
    lock_seconds,
)
from core.agreement import cohen_kappa, fleiss_kappa, rating_counts
from core.loop import ActiveLearningLoop
from storage import repository as repo
from storage import teams
from storage.errors import DuplicateLabelError
from tests.storage.test_storage_repository import run_at_once

PASSWORD = "a-long-password"


# --------------------------------------------------------------------------- agreement


@pytest.mark.parametrize("seed", range(6))
def test_cohen_kappa_equals_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 200))
    categories = [-1, 1] if seed % 2 == 0 else ["a", "b", "c"]
    first = list(rng.choice(categories, size=n))
    # the second rater agrees with the first most of the time
    second = [x if rng.random() < 0.7 else rng.choice(categories) for x in first]
    ours = cohen_kappa(first, second)
    assert ours.n_items == n
    assert ours.value == pytest.approx(cohen_kappa_score(first, second), abs=1e-12)


def test_cohen_kappa_of_arrays_equals_that_of_lists_bit_for_bit():
    """The counting of numeric arrays gives the table and the category order (by repr) of the general path."""
    rng = np.random.default_rng(8)
    for values in ([False, True], [-1, 1], [9, 10, 11], [0.5, 2.0]):
        for n in (1, 7, 300):
            a = rng.choice(values, size=n)
            b = np.where(rng.random(n) < 0.6, a, rng.choice(values, size=n))
            arrays, lists = cohen_kappa(a, b), cohen_kappa([x.item() for x in a], [x.item() for x in b])
            assert arrays.n_items == lists.n_items == n
            for got, want in [
                (arrays.value, lists.value),
                (arrays.observed, lists.observed),
                (arrays.expected, lists.expected),
            ]:
                assert got == want


def test_fleiss_kappa_of_the_textbook_example():
    # Fleiss (1971) as reproduced on Wikipedia: 10 subjects, 14 raters, 5 categories
    table = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    kappa = fleiss_kappa(table)
    assert kappa.observed == pytest.approx(0.378, abs=5e-4)  # P_bar
    assert kappa.expected == pytest.approx(0.213, abs=5e-4)  # P_e
    assert kappa.value == pytest.approx(0.210, abs=5e-4)
    assert kappa.raters == 14 and kappa.n_items == 10


def test_fleiss_kappa_by_hand_and_equal_to_scotts_pi_for_two_raters():
    ratings = [(1, 1), (1, -1), (-1, -1), (-1, -1)]
    kappa = fleiss_kappa(rating_counts(ratings, (-1, 1)))
    # P_i = 1, 0, 1, 1 -> P_bar = 3/4; p_-1 = 5/8, p_+1 = 3/8 -> P_e = 34/64; kappa = (3/4 - 34/64) / (30/64) = 7/15
    assert kappa.value == pytest.approx(7 / 15, abs=1e-15)
    rng = np.random.default_rng(3)
    pairs = [(int(a), int(a if rng.random() < 0.8 else -a)) for a in rng.choice([-1, 1], size=60)]
    # two raters per item: Fleiss' kappa is Scott's pi, (p_o - p_e) / (1 - p_e) with pooled shares
    p_o = np.mean([a == b for a, b in pairs])
    share = np.mean([v == 1 for pair in pairs for v in pair])
    p_e = share**2 + (1 - share) ** 2
    assert fleiss_kappa(rating_counts(pairs, (-1, 1))).value == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-12)


def test_kappa_is_undefined_not_nan_when_every_answer_is_one_class():
    assert cohen_kappa([1, 1, 1], [1, 1, 1]).value is None
    assert fleiss_kappa(rating_counts([(1, 1), (1, 1)], (-1, 1))).value is None
    assert cohen_kappa([], []).value is None
    with pytest.raises(ValueError, match="same number of ratings"):
        fleiss_kappa(np.array([[1, 1], [2, 1]]))
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa([1], [1, -1])


# --------------------------------------------------------------------------- accounts and sign-in


@pytest.fixture
def svc(engine):
    service = MarginLab(engine)
    service.failure_delay_s = 0.0  # the pause after a failure is measured by the test that needs it
    service.ensure_demo_dataset()
    return service


def owner(svc: MarginLab, name: str = "olga"):
    if teams.get_account(svc.engine, name) is None:
        teams.create_account(svc.engine, name=name, role="owner", password_hash=hash_password(PASSWORD))
    return svc.sign_in(name, PASSWORD)


def test_passwords_are_stored_as_argon2id_hashes_and_checked(svc):
    me = owner(svc)
    svc.create_account(me, name="ann", password=PASSWORD)
    stored = teams.get_account(svc.engine, "ann")
    assert stored.password_hash.startswith("$argon2id$") and PASSWORD not in stored.password_hash
    assert svc.sign_in(" ann ", PASSWORD).name == "ann"
    with pytest.raises(SignInError, match="^Wrong name or password.$"):
        svc.sign_in("ann", PASSWORD + "x")
    with pytest.raises(SignInError, match="^Wrong name or password.$"):
        svc.sign_in("nobody", PASSWORD)  # the same answer for a name without an account
    with pytest.raises(ServiceError, match="at least 8"):
        svc.create_account(me, name="bob", password="short")
    with pytest.raises(ServiceError, match="exists already"):
        svc.create_account(me, name="ann", password=PASSWORD)
    annotator = svc.sign_in("ann", PASSWORD)
    with pytest.raises(ServiceError, match="Only an owner"):
        svc.create_account(annotator, name="eve", password=PASSWORD)


def test_repeated_failures_lock_the_account_even_for_the_right_password(svc):
    me = owner(svc)
    svc.create_account(me, name="ann", password=PASSWORD)
    for _ in range(FREE_ATTEMPTS - 1):
        with pytest.raises(SignInError, match="^Wrong name or password.$"):
            svc.sign_in("ann", "guess-guess")
    with pytest.raises(SignInError, match="try again in 30 seconds"):
        svc.sign_in("ann", "guess-guess")
    with pytest.raises(SignInError, match="Too many failed sign-ins"):
        svc.sign_in("ann", PASSWORD)  # locked: the right password is not even checked
    assert teams.get_account(svc.engine, "ann").failed_attempts == FREE_ATTEMPTS
    assert [lock_seconds(n) for n in (4, 5, 6, 7, 20)] == [0, 30, 60, 120, 900]
    # names without an account are throttled as well
    for _ in range(FREE_ATTEMPTS):
        with pytest.raises(SignInError):
            svc.sign_in("mallory", "guess-guess")
    with pytest.raises(SignInError, match="Too many failed sign-ins"):
        svc.sign_in("mallory", "guess-guess")


def test_a_failed_sign_in_answers_after_a_pause(svc, monkeypatch):
    pauses = []
    monkeypatch.setattr(accounts, "time", SimpleNamespace(sleep=pauses.append))  # the pauses asked for
    svc.failure_delay_s = 0.3
    owner(svc)
    assert pauses == []  # (a sign-in that succeeds does not wait)
    with pytest.raises(SignInError):
        svc.sign_in("olga", "not-the-password")
    with pytest.raises(SignInError):
        svc.sign_in("nobody", "not-the-password")
    assert pauses == [0.3, 0.3]


# -- guessing: parallel guesses, the memory of the checks, telling names apart, locking others out


class CountingHasher:
    """The argon2 hasher, counting its password checks and the most that ran at once."""

    def __init__(self, real):
        self.real, self.checks, self.running, self.most_at_once = real, 0, 0, 0
        self._lock = threading.Lock()

    def verify(self, password_hash, password):
        with self._lock:
            self.checks += 1
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            return self.real.verify(password_hash, password)
        finally:
            with self._lock:
                self.running -= 1

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.fixture
def hasher(monkeypatch):
    counting = CountingHasher(accounts._hasher)
    monkeypatch.setattr(accounts, "_hasher", counting)
    return counting


@pytest.fixture
def frozen_clock(monkeypatch):
    """The service's clock stands still: a lock never runs out while a test looks at it."""
    now = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
    monkeypatch.setattr(accounts, "utc_now", lambda: now)
    return now


def guesses_at_once(svc, n: int, name: str, password: str, client: str | None = None) -> list:
    """``n`` threads released together, each trying ``password`` for ``name``; what each got."""
    return run_at_once(n, lambda _: svc.sign_in(name, password, client=client))


def test_parallel_wrong_passwords_are_counted_in_the_database_and_lock_after_the_free_attempts(
    svc, hasher, frozen_clock, monkeypatch
):
    """The attack: twelve tabs sending twelve wrong passwords at once. Each attempt is counted before its
    password is checked, in the database, so only the first FREE_ATTEMPTS are checked at all, one at a
    time for one name; then the name is locked for that client, even for the right password."""
    svc.create_account(owner(svc), name="ann", password=PASSWORD)
    checks_before = hasher.checks
    results = guesses_at_once(svc, 12, "ann", "guess-guess", client="203.0.113.9")
    assert all(isinstance(r, SignInError) for r in results), results
    assert hasher.checks - checks_before <= FREE_ATTEMPTS
    assert hasher.most_at_once <= accounts.VERIFY_PER_NAME
    assert sum("Too many failed sign-ins" in str(r) for r in results) >= 12 - FREE_ATTEMPTS
    checks = hasher.checks
    with pytest.raises(SignInError, match="Too many failed sign-ins: try again in 30 seconds"):
        svc.sign_in("ann", PASSWORD, client="203.0.113.9")  # locked: not even checked
    assert hasher.checks == checks
    # a second burst, a minute later, when the lock has run out: one more check, and a longer lock
    later = frozen_clock + dt.timedelta(seconds=31)
    monkeypatch.setattr(accounts, "utc_now", lambda: later)
    results = guesses_at_once(svc, 12, "ann", "guess-guess", client="203.0.113.9")
    assert hasher.checks == checks + 1 and all(isinstance(r, SignInError) for r in results)
    with pytest.raises(SignInError, match="try again in 60 seconds"):
        svc.sign_in("ann", PASSWORD, client="203.0.113.9")
    # the person whose account it is signs in from where they are
    assert svc.sign_in("ann", PASSWORD, client="198.51.100.7").name == "ann"


def test_password_checks_take_turns_per_name_per_client_and_in_all():
    """Each argon2id check holds 64 MiB: a process runs a bounded number at once, whatever comes in."""
    turns = Verifications(at_once=3, per_name=1, per_client=2)
    with turns.turn("ann", "x", 0):
        with pytest.raises(SignInError, match="Too many sign-ins at once"):
            with turns.turn("ANN", "y", 0):  # the same name, from elsewhere
                pass
        with turns.turn("bob", "x", 0):
            with pytest.raises(SignInError, match="Too many sign-ins at once"):
                with turns.turn("cy", "x", 0):  # a third from one client
                    pass
            with turns.turn("cy", "y", 0):
                with pytest.raises(SignInError, match="Too many sign-ins at once"):
                    with turns.turn("dan", "z", 0):  # a fourth in all
                        pass
            with turns.turn("dan", "z", 0):  # (one ended)
                pass
    # a sign-in waits for its turn, and gets it when one ends
    entered, waiting = threading.Event(), threading.Event()

    def wait_for_a_turn():
        waiting.set()
        with turns.turn("ann", "q", 60):
            entered.set()

    with turns.turn("ann", "x", 0):
        thread = threading.Thread(target=wait_for_a_turn)
        thread.start()
        waiting.wait()
        assert not entered.is_set()
    thread.join()
    assert entered.is_set()


def test_a_sign_in_without_a_turn_is_refused_without_checking_its_password(svc, hasher):
    owner(svc)
    svc.verify_wait_s = 0.0
    checks = hasher.checks
    with svc.verifications.turn("olga", "elsewhere", 0):  # a check for olga under way (per name: one)
        with pytest.raises(SignInError, match="Too many sign-ins at once"):
            svc.sign_in("olga", PASSWORD, client="here")
    assert hasher.checks == checks


def test_a_name_without_an_account_answers_as_a_name_with_one(svc, hasher, frozen_clock):
    """The same messages, in the same order, after the same single password check each (a dummy hash
    for a name without an account): the answers do not tell which names exist."""
    svc.create_account(owner(svc), name="ann", password=PASSWORD)

    def attempts(name: str, client: str) -> list[tuple[str, int]]:
        said = []
        for _ in range(FREE_ATTEMPTS + 2):
            checks = hasher.checks
            with pytest.raises(SignInError) as refused:
                svc.sign_in(name, "guess-guess", client=client)
            said.append((str(refused.value), hasher.checks - checks))
        return said

    known, unknown = attempts("ann", "192.0.2.1"), attempts("anne", "192.0.2.2")
    assert known == unknown
    assert known[FREE_ATTEMPTS - 1] == ("Wrong name or password. Too many failed sign-ins: try again in 30 seconds.", 1)


@pytest.mark.slow  # many sign-ins, each checking a password hash (several seconds)
def test_nobody_can_keep_an_owner_locked_out_from_elsewhere(svc, frozen_clock):
    """Failures lock the name for the client they came from, and a client that tries many names is locked
    itself; the owner signing in from their own place is never stopped by either."""
    me = owner(svc)
    svc.create_account(me, name="ann", password=PASSWORD)
    attacker, office = "203.0.113.9", "198.51.100.7"
    for _ in range(FREE_ATTEMPTS + 3):
        with pytest.raises(SignInError):
            svc.sign_in("olga", "guess-guess", client=attacker)
    with pytest.raises(SignInError, match="Too many failed sign-ins"):
        svc.sign_in("olga", PASSWORD, client=attacker)
    assert svc.sign_in("olga", PASSWORD, client=office).is_owner
    # one client spraying many names: after CLIENT_FREE_ATTEMPTS failures in a row it is locked, whatever the name
    sprayer = "203.0.113.10"
    for k in range(CLIENT_FREE_ATTEMPTS - 1):
        with pytest.raises(SignInError, match=r"^Wrong name or password\.$"):
            svc.sign_in(f"name-{k}", "guess-guess", client=sprayer)
    with pytest.raises(SignInError, match="try again in 30 seconds"):
        svc.sign_in("yet-another-name", "guess-guess", client=sprayer)
    with pytest.raises(SignInError, match="Too many failed sign-ins"):
        svc.sign_in("ann", PASSWORD, client=sprayer)
    assert svc.sign_in("ann", PASSWORD, client=office).name == "ann"
    assert lock_seconds(CLIENT_FREE_ATTEMPTS, free=CLIENT_FREE_ATTEMPTS) == 30
    # a success starts the name over for that client: four failures after it do not lock
    for _ in range(FREE_ATTEMPTS - 1):
        with pytest.raises(SignInError, match=r"^Wrong name or password\.$"):
            svc.sign_in("ann", "guess-guess", client=office)
    assert svc.sign_in("ann", PASSWORD, client=office).name == "ann"
    for _ in range(FREE_ATTEMPTS - 1):
        with pytest.raises(SignInError, match=r"^Wrong name or password\.$"):
            svc.sign_in("ann", "guess-guess", client=office)


def test_the_client_is_the_connection_or_what_a_proxy_on_this_machine_forwarded():
    assert accounts.client_of("198.51.100.7", "203.0.113.9") == "198.51.100.7"  # a remote peer's header: ignored
    assert accounts.client_of(None, "203.0.113.9, 10.1.2.3") == "10.1.2.3"  # (the proxy added the last one)
    assert accounts.client_of(None, "2001:db8::1") == "2001:db8::1"
    assert accounts.client_of(None, None) is None and accounts.client_of(None, "") is None
    assert accounts.client_of(None, "203.0.113.9, me-honest") is None  # not an address: not believed


def test_failures_untouched_for_a_day_are_forgotten(svc, monkeypatch):
    day_one = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
    monkeypatch.setattr(accounts, "utc_now", lambda: day_one)
    owner(svc)
    for _ in range(FREE_ATTEMPTS - 1):
        with pytest.raises(SignInError, match=r"^Wrong name or password\.$"):
            svc.sign_in("olga", "guess-guess", client="c")
    day_two = day_one + accounts.FORGET_AFTER + dt.timedelta(seconds=1)
    monkeypatch.setattr(accounts, "utc_now", lambda: day_two)
    for _ in range(FREE_ATTEMPTS - 1):  # counted from nothing again: no lock
        with pytest.raises(SignInError, match=r"^Wrong name or password\.$"):
            svc.sign_in("olga", "guess-guess", client="c")
    from sqlalchemy import func, select

    from storage.models import SignInThrottle
    from storage.repository import reading

    with reading(svc.engine) as session:  # one row per key, none left over from the day before
        assert session.execute(select(func.count()).select_from(SignInThrottle)).scalar_one() == 2


def test_a_sign_in_ends_when_the_password_changes_or_the_account_is_disabled(svc):
    me = owner(svc)
    svc.create_account(me, name="ann", password=PASSWORD)
    ann = svc.sign_in("ann", PASSWORD)
    assert svc.still_valid(ann) == ann
    svc.change_password(me, "ann", "another-password")
    assert svc.still_valid(ann) is None
    ann = svc.sign_in("ann", "another-password")
    svc.set_disabled(me, "ann", True)
    assert svc.still_valid(ann) is None
    with pytest.raises(SignInError, match="disabled"):
        svc.sign_in("ann", "another-password")
    with pytest.raises(ServiceError, match="last owner"):
        svc.set_disabled(me, "olga", True)
    with pytest.raises(ServiceError, match="current password is wrong"):
        svc.change_password(me, "olga", "new-password-1", current_password="wrong")


def test_two_owners_disabling_each_other_at_once_leave_one_owner(svc, monkeypatch):
    """The attack: two owners disable each other at the same moment. Each change counts the owners in the
    transaction that makes it, so one of them wins. (The barriers make both read the accounts before
    either changes anything: the moment at which a check made outside that transaction is fooled.)"""
    olga, pia = owner(svc), owner(svc, "pia")
    for name in ("get_account", "count_owners"):
        read, both_read = getattr(teams, name), threading.Barrier(2)

        def read_then_wait(*args, read=read, both_read=both_read, **kwargs):
            found = read(*args, **kwargs)
            both_read.wait()
            return found

        monkeypatch.setattr(teams, name, read_then_wait)
    results = [None, None]

    def disable(k, actor, other):
        try:
            svc.set_disabled(actor, other, True)
            results[k] = "done"
        except ServiceError as error:
            results[k] = str(error)

    threads = [
        threading.Thread(target=disable, args=(0, olga, "pia")),
        threading.Thread(target=disable, args=(1, pia, "olga")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    monkeypatch.undo()
    assert sorted(results) == ["The last owner cannot be disabled.", "done"], results
    enabled = [a.name for a in teams.list_accounts(svc.engine) if a.role == "owner" and not a.disabled]
    assert len(enabled) == 1 and teams.count_owners(svc.engine) == 1
    assert svc.sign_in(enabled[0], PASSWORD).is_owner
    # nor can the last owner lose the role
    with pytest.raises(teams.LastOwnerError):
        teams.set_account_role(svc.engine, teams.get_account(svc.engine, enabled[0]).id, "annotator")
    assert teams.count_owners(svc.engine) == 1


def test_a_disabled_or_reset_account_writes_nothing_more(svc):
    """The attack: the owner disables ann (or resets her password), and ann goes on pressing P / N on the
    page she still has open. Every action that writes checks her identity in the database first."""
    me = owner(svc)
    svc.create_account(me, name="ann", password=PASSWORD)
    project_id = project(svc, members=("ann", "bob"))
    dataset_id = svc.datasets()[0].id
    run = None
    for end_it in (lambda: svc.set_disabled(me, "ann", True), lambda: svc.change_password(me, "ann", "a-new-password")):
        ann = svc.sign_in("ann", PASSWORD)
        if run is None:
            run = svc.start_session(dataset_id=dataset_id, annotator="ann", strategy="random", by=ann)
        item = run.shown.item_index
        assert run.answer(1, item_index=item, by=ann).ok  # while the sign-in holds
        label_id = run.answers[-1].label_id
        team = svc.project_for(ann, project_id)
        shown = team.next_item("ann")
        stored = [(e.label_id, e.value) for e in repo.label_events(svc.engine, run.session_id)]
        answers = teams.project_answers(svc.engine, project_id)[1]
        end_it()
        refused = [
            run.answer(-1, item_index=run.shown.item_index, by=ann),
            run.skip(run.shown.item_index, by=ann),
            run.undo(last_item_index=item, by=ann),
            run.change_label(label_id, -1, by=ann),
            run.remove_label(label_id, by=ann),
            run.start_check(by=ann),
            run.set_stopping(rule="knee", by=ann),
            run.close(by=ann),
            svc.close_session(run.session_id, by=ann),
            svc.rename_session(run.session_id, "mine", by=ann),
            team.answer("ann", shown.item_index, 1, shown, by=ann),
            team.undo("ann", by=ann),
        ]
        assert all(not outcome.ok and outcome.message == SIGN_IN_ENDED for outcome in refused), refused
        for action in (
            partial(svc.start_session, dataset_id=dataset_id, annotator="ann", strategy="random", by=ann),
            partial(
                run.import_labels, b"item_index,label\n1,1\n", key_column="item_index", label_column="label", by=ann
            ),
            partial(svc.set_eval_fraction, dataset_id, 0.5, by=ann),
            partial(svc.change_password, ann, "ann", "another-password", current_password=PASSWORD),
        ):
            with pytest.raises(SignedOutError, match="Your sign-in has ended"):
                action()
        assert [(e.label_id, e.value) for e in repo.label_events(svc.engine, run.session_id)] == stored
        assert teams.project_answers(svc.engine, project_id)[1] == answers
        assert repo.get_session(svc.engine, run.session_id).status == "active"
        assert len(repo.list_sessions(svc.engine, annotator="ann")) == 1 + 1  # (her solo one and the project's)
        svc.set_disabled(me, "ann", False)
    # an owner whose sign-in ended is no owner any more either
    svc.change_password(me, "olga", "a-new-password", current_password=PASSWORD)
    with pytest.raises(SignedOutError):
        svc.create_account(me, name="eve", password=PASSWORD)
    assert teams.get_account(svc.engine, "eve") is None


def test_the_first_start_creates_the_owner_from_the_environment_or_prints_a_password_once(engine, monkeypatch, capsys):
    svc = MarginLab(engine)
    monkeypatch.setenv("MARGINLAB_OWNER_PASSWORD", PASSWORD)
    monkeypatch.setenv("MARGINLAB_OWNER_NAME", "boss")
    assert svc.ensure_owner() is None
    assert svc.sign_in("boss", PASSWORD).role == "owner"
    assert PASSWORD not in capsys.readouterr().err
    assert svc.ensure_owner() is None  # an owner exists: nothing is created or printed
    assert len(teams.list_accounts(engine)) == 1


def test_without_the_variable_the_first_owner_password_is_printed_once(engine, monkeypatch, capsys):
    svc = MarginLab(engine)
    monkeypatch.delenv("MARGINLAB_OWNER_PASSWORD", raising=False)
    monkeypatch.delenv("MARGINLAB_OWNER_NAME", raising=False)
    password = svc.ensure_owner()
    printed = capsys.readouterr().err
    assert password and len(password) >= 16 and password in printed and "'owner'" in printed
    assert "My labels page (Change my password)" in printed  # where an owner changes their own password
    assert svc.sign_in("owner", password).is_owner
    assert svc.ensure_owner() is None and password not in capsys.readouterr().err


# --------------------------------------------------------------------------- projects


def project(svc: MarginLab, members=("ann", "bob"), **kw) -> int:
    me = owner(svc)
    for name in members:
        if teams.get_account(svc.engine, name) is None:
            svc.create_account(me, name=name, password=PASSWORD)
    kw.setdefault("strategy", "near-boundary")
    return svc.create_project(
        me, name=kw.pop("name", "team"), dataset_id=svc.datasets()[0].id, members=list(members), **kw
    )


def truth(svc: MarginLab) -> np.ndarray:
    return repo.load_dataset_arrays(svc.engine, svc.datasets()[0].id)[1]


def fresh_model(run, labels: list[tuple[int, int]]) -> ActiveLearningLoop:
    """An independent loop taught ``labels`` in order (what the shared model must equal)."""
    loop = ActiveLearningLoop(
        run.X, strategy=run.info.strategy, solver=run.info.solver, solver_params=run.solver_params, seed=run.info.seed
    )
    for item, value in labels:
        loop.teach(item, value)
    return loop


def test_a_warm_start_brings_back_the_last_solo_session_not_a_projects(svc):
    from app.services import startup

    y = truth(svc)
    solo = svc.start_session(dataset_id=svc.datasets()[0].id, annotator="ann", strategy="random", seed=0)
    item = solo.shown.item_index
    assert solo.answer(int(y[item]), item_index=item).ok
    project_id = project(svc)
    run = svc.open_project(project_id)
    shown = run.next_item("bob")
    assert run.answer("bob", shown.item_index, int(y[shown.item_index]), shown).ok  # labelled after the solo one
    assert teams.project_session_ids(svc.engine)
    assert startup.latest_session(svc) == solo.session_id


def test_members_are_handed_different_items_and_one_model_learns_every_answer(svc):
    project_id = project(svc, members=("ann", "bob", "cy"))
    y = truth(svc)
    run = svc.open_project(project_id)
    other_process = MarginLab(svc.engine).open_project(project_id)  # a second server on the same database
    given = []
    for _ in range(8):
        shown = {name: (run if name != "cy" else other_process).next_item(name) for name in ("ann", "bob", "cy")}
        items = [s.item_index for s in shown.values()]
        assert len(set(items)) == 3, shown  # nobody holds another's item
        for name, item in shown.items():
            holder = run if name != "cy" else other_process
            assert holder.answer(name, item.item_index, int(y[item.item_index]), item).ok
            given.append((item.item_index, int(y[item.item_index])))
    _, answers = teams.project_answers(svc.engine, project_id)
    assert sorted((a.item_index, a.value) for a in answers) == sorted(given)  # nothing lost, nothing twice
    assert len({a.item_index for a in answers}) == len(answers)
    in_order = [(a.item_index, a.value) for a in answers]
    for holder in (run, other_process):
        holder.sync()
        assert holder.model_labels == dict(in_order)
        np.testing.assert_allclose(
            holder.loop.pool_scores(), fresh_model(holder, in_order).pool_scores(), rtol=0, atol=1e-9
        )
    # an item answered once is refused to anyone else (no overlap asked for)
    taken = answers[0].item_index
    outcome = run.answer("bob" if answers[0].annotator != "bob" else "ann", taken, 1)
    assert not outcome.ok and "answered by another annotator" in outcome.message
    assert len(teams.project_answers(svc.engine, project_id)[1]) == len(answers)
    # and one's own double click is refused too
    with pytest.raises(DuplicateLabelError):
        teams.record_answer(
            svc.engine,
            project_id,
            annotator=answers[0].annotator,
            item_index=taken,
            value=1,
            strategy="x",
            solver="incremental",
        )


def test_a_reservation_holds_until_it_expires(svc):
    project_id = project(svc, reservation_seconds=1)
    assert teams.reserve_item(svc.engine, project_id, annotator="ann", item_index=5, seconds=60)
    assert not teams.reserve_item(svc.engine, project_id, annotator="bob", item_index=5, seconds=60)
    assert teams.reservation_of(svc.engine, project_id, "ann") == 5
    assert teams.reserved_items(svc.engine, project_id, except_annotator="bob") == {5: "ann"}
    assert teams.reserve_item(svc.engine, project_id, annotator="ann", item_index=6, seconds=-1)  # expired at once
    assert teams.reserve_item(svc.engine, project_id, annotator="bob", item_index=6, seconds=60)
    with pytest.raises(Exception, match="not a member"):
        teams.reserve_item(svc.engine, project_id, annotator="olga", item_index=7, seconds=60)


def test_dual_screening_asks_a_second_member_then_closes_the_item(svc):
    project_id = project(svc, members=("ann", "bob", "cy"), labels_per_item=2, overlap_share=1.0)
    run = svc.open_project(project_id)
    first = run.next_item("ann")
    assert run.answer("ann", first.item_index, 1, first).ok
    second = run.next_item("bob")
    assert second.item_index == first.item_index and second.second_opinion
    assert run.answer("bob", second.item_index, -1, second).ok
    assert run.next_item("cy").item_index != first.item_index
    outcome = run.answer("cy", first.item_index, 1)
    assert not outcome.ok and "answered by another annotator" in outcome.message
    report = run.agreement()
    assert report.disagreements == [first.item_index] and report.n_overlap_items == 1
    assert run.model_labels[first.item_index] == 1  # the first answer until it is settled


@pytest.mark.parametrize("solver", ["incremental", "active-set", "lasvm"])
def test_settling_teaches_the_model_the_settled_answer_exactly(svc, solver):
    project_id = project(svc, members=("ann", "bob"), labels_per_item=2, overlap_share=1.0, solver=solver)
    y = truth(svc)
    run = svc.open_project(project_id)
    for step in range(12):
        for name in ("ann", "bob"):
            shown = run.next_item(name)
            value = int(y[shown.item_index])
            if name == "bob" and step in (4, 9):
                value = -value  # two disagreements
            assert run.answer(name, shown.item_index, value, shown).ok
    report = run.agreement()
    assert len(report.disagreements) == 2
    exact = solver != "lasvm"
    for item in report.disagreements:
        settled = -run.model_labels[item]  # settle against the first answer: the model must change
        svc.settle(owner(svc), project_id, item, settled)
    assert run.agreement().disagreements == []
    _, answers = teams.project_answers(svc.engine, project_id)
    settled = {item: s.value for item, s in teams.settlements(svc.engine, project_id).items()}
    order, wanted = [], {}
    for a in answers:
        if a.item_index not in wanted and a.value != 0:
            order.append(a.item_index)
            wanted[a.item_index] = settled.get(a.item_index, a.value)
    assert run.model_labels == wanted
    # the model equals one trained on the settled answers in label order: up to rounding where the solver
    # unlearns exactly (the optimum does not depend on the order), by construction for the others
    reference = fresh_model(run, [(i, wanted[i]) for i in order])
    np.testing.assert_allclose(run.loop.pool_scores(), reference.pool_scores(), rtol=0, atol=1e-6 if exact else 0)
    # another process rebuilding from the database agrees
    rebuilt = MarginLab(svc.engine).open_project(project_id)
    rebuilt.sync()
    assert rebuilt.model_labels == wanted
    np.testing.assert_allclose(rebuilt.loop.pool_scores(), run.loop.pool_scores(), rtol=0, atol=1e-6)
    kappa = run.agreement().cohen[("ann", "bob")]
    assert kappa.n_items == 12
    assert kappa.value == pytest.approx(
        cohen_kappa_score(
            [report.per_item[i]["ann"] for i in sorted(report.per_item)],
            [report.per_item[i]["bob"] for i in sorted(report.per_item)],
        ),
        abs=1e-12,
    )


def test_undo_takes_back_only_ones_own_last_answer_and_the_model_forgets_it(svc):
    project_id = project(svc)
    y = truth(svc)
    run = svc.open_project(project_id)
    for _ in range(5):
        for name in ("ann", "bob"):
            shown = run.next_item(name)
            assert run.answer(name, shown.item_index, int(y[shown.item_index]), shown).ok
    _, answers = teams.project_answers(svc.engine, project_id)
    ann_last = max((a for a in answers if a.annotator == "ann"), key=lambda a: a.label_id)
    outcome = run.undo("ann")
    assert outcome.ok and str(ann_last.item_index) in outcome.message
    _, after = teams.project_answers(svc.engine, project_id)
    assert [a.label_id for a in after] == [a.label_id for a in answers if a.label_id != ann_last.label_id]
    assert ann_last.item_index not in run.model_labels
    in_order = [(a.item_index, a.value) for a in after]
    np.testing.assert_allclose(run.loop.pool_scores(), fresh_model(run, in_order).pool_scores(), rtol=0, atol=1e-6)
    assert run.next_item("ann").item_index == ann_last.item_index  # handed back to ann
    # a stale undo (the label is no longer the last) changes nothing
    assert teams.undo_answer(svc.engine, project_id, annotator="bob", label_id=answers[0].label_id) is None


def answer_in_turn(run, y, rounds: int, names=("ann", "bob")) -> None:
    for _ in range(rounds):
        for name in names:
            shown = run.next_item(name)
            assert run.answer(name, shown.item_index, int(y[shown.item_index]), shown).ok


@pytest.mark.parametrize("solver", ["incremental", "lasvm"])
def test_a_project_reopens_from_its_snapshot_with_the_running_process_s_model(svc, solver):
    from app.services.snapshots import SNAPSHOT_EVERY

    project_id = project(svc, solver=solver)
    y = truth(svc)
    run = svc.open_project(project_id)
    answer_in_turn(run, y, 14)  # 28 labels: a snapshot was stored when the model had learned 25
    stored = teams.latest_project_snapshot(svc.engine, project_id)
    assert stored is not None and len(stored.meta["project"]["model_labels"]) == SNAPSHOT_EVERY
    answer_in_turn(run, y, 2)
    restarted = MarginLab(svc.engine).open_project(project_id)  # a new server on the same database
    assert restarted.resume_note == f"resumed from the snapshot after {SNAPSHOT_EVERY} labels"
    assert restarted.loop.n_labels == SNAPSHOT_EVERY
    restarted.sync()  # learns the 7 answers after the snapshot, in label order, as the running process did
    run.sync()
    assert restarted.model_labels == run.model_labels and len(run.model_labels) == 32
    np.testing.assert_array_equal(restarted.loop.pool_scores(), run.loop.pool_scores())  # bit for bit
    _, answers = teams.project_answers(svc.engine, project_id)
    reference = fresh_model(run, [(a.item_index, a.value) for a in answers])
    np.testing.assert_allclose(restarted.loop.pool_scores(), reference.pool_scores(), rtol=0, atol=1e-9)
    # both models pick the same next item (before any reservation)
    assert restarted.loop.propose().index == run.loop.propose().index


@pytest.mark.parametrize("solver", ["incremental", "lasvm"])
def test_an_undo_after_the_snapshot_is_taken_back_or_the_snapshot_passed_over(svc, solver):
    project_id = project(svc, solver=solver)
    y = truth(svc)
    run = svc.open_project(project_id)
    answer_in_turn(run, y, 13)
    assert teams.latest_project_snapshot(svc.engine, project_id) is not None
    _, answers = teams.project_answers(svc.engine, project_id)
    first_of_ann = next(a for a in answers if a.annotator == "ann")
    last_of_ann = max((a for a in answers if a.annotator == "ann"), key=lambda a: a.label_id)
    # ann undoes her last answer (after the snapshot's 25) through another server: no snapshot after it
    assert teams.undo_answer(svc.engine, project_id, annotator="ann", label_id=last_of_ann.label_id) is not None
    restarted = MarginLab(svc.engine).open_project(project_id)
    if solver == "incremental":  # unlearns exactly: resumes, then takes back what changed
        assert restarted.resume_note.startswith("resumed from the snapshot")
    else:  # learns every answer again in label order, as the running process did after the undo
        assert restarted.resume_note == "answers were undone or settled since the snapshot: every answer learned"
    restarted.sync()
    run.sync()
    assert restarted.model_labels == run.model_labels and first_of_ann.item_index in run.model_labels
    assert last_of_ann.item_index not in run.model_labels
    np.testing.assert_allclose(
        restarted.loop.pool_scores(), run.loop.pool_scores(), rtol=0, atol=1e-9 if solver == "incremental" else 0
    )


def test_a_stopping_server_stores_the_projects_behind_their_answers_and_odd_snapshots_are_passed_over(svc):
    import weakref

    from app.services import startup

    project_id = project(svc)
    y = truth(svc)
    run = svc.open_project(project_id)
    answer_in_turn(run, y, 2)
    assert teams.latest_project_snapshot(svc.engine, project_id) is None
    # what the server does as it stops (app.services.startup): sessions' snapshots, then projects'
    startup._save_snapshots_at_exit(weakref.ref(svc))
    assert not run.snapshot_is_behind and svc.save_project_snapshots() == 0  # nothing new: nothing stored
    answer_in_turn(run, y, 1, names=("ann",))
    assert run.snapshot_is_behind and svc.save_project_snapshots() == 1
    reopened = MarginLab(svc.engine).open_project(project_id)
    assert reopened.resume_note == "resumed from the snapshot after 5 labels"
    # a snapshot made with another configuration (here: another seed) is passed over
    arrays, loop_meta = run.loop.to_state()
    loop_meta["config"]["seed"] = 99
    teams.save_project_snapshot(
        svc.engine,
        project_id,
        revision=10**6,
        edits=0,
        arrays=arrays,
        meta={"loop": loop_meta, "project": {"format": 1, "model_labels": []}},
    )
    other = MarginLab(svc.engine).open_project(project_id)
    assert other.resume_note == "the snapshot is for another configuration: every answer learned"
    assert other.loop.n_labels == 0
    other.sync()
    np.testing.assert_array_equal(other.loop.pool_scores(), run.loop.pool_scores())
    # a snapshot whose labels are not its model's is passed over too
    arrays, loop_meta = run.loop.to_state()
    wrong = {"loop": loop_meta, "project": {"format": 1, "model_labels": [[0, 1]]}}
    teams.save_project_snapshot(svc.engine, project_id, revision=10**6 + 1, edits=0, arrays=arrays, meta=wrong)
    assert MarginLab(svc.engine).open_project(project_id).resume_note.startswith("the snapshot's labels are not")
    # only the most advanced few are kept, and they go with the project
    assert len(teams.latest_project_snapshot(svc.engine, project_id).meta["project"]["model_labels"]) == 1
    with pytest.raises(Exception, match="does not exist"):
        teams.save_project_snapshot(svc.engine, 10**6, revision=0, edits=0, arrays={})


def test_what_to_find_is_stored_with_the_project_and_the_owner_may_change_it(svc):
    """The owner's words for what a Positive answer means: stored in the project's settings (the
    session's limits: spaces folded, FIND_CHARS at most), read by every process holding the project,
    changed by an owner only; the shared model's settings do not move."""
    from app.services.common import FIND_CHARS

    project_id = project(svc, find="  loops   that\n<b>close</b> [x](http://e.org) ")
    info = teams.get_project(svc.engine, project_id)
    assert info.params["find"] == "loops that <b>close</b> [x](http://e.org)"
    run = svc.open_project(project_id)
    assert run.looking_for == "loops that <b>close</b> [x](http://e.org)"
    solver_before = (dict(run.solver_params), dict(run.strategy_params), info.params["scaling"])

    me, ann = owner(svc), svc.sign_in("ann", PASSWORD)
    with pytest.raises(ServiceError, match="owner"):
        svc.set_project_find(ann, project_id, "something else")
    svc.set_project_find(me, project_id, "open   loops")
    changed = teams.get_project(svc.engine, project_id)
    assert changed.params["find"] == "open loops"
    assert run.looking_for == "open loops"  # (the run this process already holds reads it again)
    assert (changed.params["solver_params"], changed.params["strategy_params"], changed.params["scaling"]) == (
        solver_before[0],
        solver_before[1],
        solver_before[2],
    )
    assert (changed.revision, changed.edits) == (info.revision, info.edits)  # the shared model has nothing to do
    # emptied: the dataset's positive class says what Positive means (as in a session without words)
    svc.set_project_find(me, project_id, "   ")
    assert "find" not in teams.get_project(svc.engine, project_id).params
    assert run.looking_for == "8"
    # long words are cut to the session's limit; a project without words has none stored
    long_id = project(svc, name="long", find="x" * (FIND_CHARS + 50))
    assert teams.get_project(svc.engine, long_id).params["find"] == "x" * FIND_CHARS
    assert "find" not in teams.get_project(svc.engine, project(svc, name="plain")).params
    with pytest.raises(ServiceError, match="NUL"):
        svc.set_project_find(me, project_id, "a\x00b")
    with pytest.raises(ServiceError, match="does not exist"):
        svc.set_project_find(me, 10**6, "x")


def test_an_annotator_sees_only_their_projects_and_their_own_history(svc):
    project_id = project(svc)
    y = truth(svc)
    run = svc.open_project(project_id)
    for name in ("ann", "bob", "ann"):
        shown = run.next_item(name)
        run.answer(name, shown.item_index, int(y[shown.item_index]), shown)
    ann = svc.sign_in("ann", PASSWORD)
    assert [p.id for p in svc.projects(ann)] == [project_id]
    history = svc.own_history(ann)
    assert len(history) == 2 and {e.annotator for e in history} == {"ann"}
    with pytest.raises(ServiceError, match="Only an owner"):
        svc.agreement_csv(ann, project_id)
    with pytest.raises(ServiceError, match="Only an owner"):
        svc.settle(ann, project_id, 0, 1)
    svc.create_account(owner(svc), name="dan", password=PASSWORD)
    dan = svc.sign_in("dan", PASSWORD)
    assert svc.projects(dan) == []
    with pytest.raises(ServiceError, match="not a member"):
        svc.project_for(dan, project_id)
    # project sessions are not offered as one's own sessions on the Label page
    assert svc.sessions(annotator="ann", solo=True) == []


# --------------------------------------------------------------------------- several processes at once


def label_in_project(url: str, project_id: int, name: str, rounds: int, start, done, results) -> None:
    """A member in a process of its own: take the next item, answer it, report what was stored."""
    try:
        _label_in_project(url, project_id, name, rounds, start, done, results)
    except BaseException:
        import traceback

        results.put((name, "failed", traceback.format_exc()))
        start.abort()
        done.abort()
        raise


def _label_in_project(url: str, project_id: int, name: str, rounds: int, start, done, results) -> None:
    svc = MarginLab.from_url(url)
    run = svc.open_project(project_id)
    y = repo.load_dataset_arrays(svc.engine, run.info.dataset_id)[1]
    rng = random.Random(name)
    start.wait(timeout=300)
    stored, refused = [], 0
    for _ in range(rounds):
        shown = run.next_item(name)
        if shown is None:
            break
        value = int(y[shown.item_index]) if rng.random() < 0.9 else -int(y[shown.item_index])
        outcome = run.answer(name, shown.item_index, value, shown)
        if outcome.ok:
            stored.append((shown.item_index, value))
        else:
            refused += 1
    done.wait(timeout=600)  # everyone has answered: the shared model of each process catches up with all of it
    run.sync()
    scores = run.loop.pool_scores()
    results.put((name, stored, refused, sorted(run.model_labels.items()), scores[:50].tolist()))


def collect(results, workers, timeout: float = 600.0):
    """Each worker's report, failing at once when a worker ended without one (its error is in its stderr)."""
    import queue
    import time

    deadline, reports = time.monotonic() + timeout, []
    while len(reports) < len(workers):
        try:
            report = results.get(timeout=1.0)
            assert report[1] != "failed", f"worker {report[0]} failed:\n{report[2]}"
            reports.append((report[0], report[1:]))
        except queue.Empty:
            ended = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
            assert not ended, f"a worker failed (exit codes {ended}); see its traceback above"
            assert time.monotonic() < deadline, "the workers did not finish in time"
    return reports


@pytest.mark.processes
@pytest.mark.parametrize("overlap", [0.0, 0.5])
def test_four_processes_label_one_project_without_losing_or_doubling_an_answer(engine, overlap):
    svc = MarginLab(engine)
    svc.ensure_demo_dataset()
    project_id = project(
        svc, members=("p0", "p1", "p2", "p3"), labels_per_item=2, overlap_share=overlap, strategy="randomized-search"
    )
    url = engine.url.render_as_string(hide_password=False)
    context = multiprocessing.get_context("spawn")
    start, done, results = context.Barrier(4), context.Barrier(4), context.Queue()
    workers = [
        context.Process(target=label_in_project, args=(url, project_id, f"p{k}", 12, start, done, results))
        for k in range(4)
    ]
    for worker in workers:
        worker.start()
    try:
        reports = dict(collect(results, workers))
    finally:
        for worker in workers:
            worker.join(timeout=60)
            if worker.is_alive():
                worker.kill()
    assert all(worker.exitcode == 0 for worker in workers)
    _, answers = teams.project_answers(engine, project_id)
    stored = sorted((a.annotator, a.item_index, a.value) for a in answers)
    reported = sorted((name, item, value) for name, (rows, _, _, _) in reports.items() for item, value in rows)
    assert stored == reported and len(stored) == 48  # every answer stored once, none lost
    # the reservations kept members apart: no answer had to be refused for an item someone else answered
    assert [r[1] for r in reports.values()] == [0, 0, 0, 0]
    per_item: dict[int, list[str]] = {}
    for a in answers:
        per_item.setdefault(a.item_index, []).append(a.annotator)
    info = teams.get_project(engine, project_id)
    for item, names in per_item.items():
        assert len(names) == len(set(names)) and len(names) <= teams.answers_needed(info, item), (item, names)
        if overlap == 0.0:
            assert len(names) == 1
    # every process ends with the same shared model
    labels = {tuple(map(tuple, r[2])) for r in reports.values()}
    assert len(labels) == 1
    first = next(iter(reports.values()))[3]
    for report in reports.values():
        np.testing.assert_allclose(report[3], first, rtol=0, atol=1e-9)


# --------------------------------------------------------------------------- the migration


def test_migration_0003_adds_the_team_tables_to_a_schema_version_2_database_and_goes_back(database_url):
    from alembic import command
    from sqlalchemy import MetaData, inspect, text

    from storage import init_db, make_engine, migrations
    from tests.storage.test_storage_migrations import recorded_revision, schema_differences, version_1_rows

    engine = make_engine(database_url)
    try:
        with engine.begin() as connection:  # a database at the revision before, with a session and a label
            command.upgrade(migrations.alembic_config(connection), "0002_label_history")
            tables = MetaData()  # (a dataset as that revision stored it: its matrix in datasets.features)
            tables.reflect(connection, only=["datasets", "items"])
            for name in ("datasets", "items"):
                connection.execute(tables.tables[name].insert(), version_1_rows()[name])
            if engine.dialect.name == "postgresql":  # rows were given their ids: move the sequences past them
                for name in ("datasets", "items"):
                    connection.execute(
                        text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), max(id)) FROM {name}")
                    )
        matrix = version_1_rows()["datasets"][0]["features"]
        session_id = repo.start_session(engine, dataset_id=1, annotator="ann", strategy="random", solver="lasvm")
        repo.record_label(engine, session_id, item_index=1, value=1, annotator="ann", strategy="random", solver="lasvm")
        assert not inspect(engine).has_table("accounts")
        init_db(engine)
        assert recorded_revision(engine) == migrations.head_revision()  # 0002_label_history -> 0003_teams -> ...
        assert schema_differences(engine) == []
        assert [e.item_index for e in repo.label_events(engine, session_id)] == [1]
        svc = MarginLab(engine)
        svc.failure_delay_s = 0
        me = owner(svc)
        assert me.is_owner and svc.create_project(me, name="p", dataset_id=1, strategy="random") == 1
        with engine.begin() as connection:
            command.downgrade(migrations.alembic_config(connection), "0002_label_history")
        tables = set(inspect(engine).get_table_names())
        assert not tables & {"accounts", "projects", "project_members", "item_reservations", "adjudications"}
        # (read as that revision stores it: today's events read columns of schema version 8)
        with engine.connect() as connection:
            assert connection.execute(
                text(
                    "SELECT items.position FROM labels JOIN items ON items.id = labels.item_id "
                    "WHERE labels.session_id = :s AND labels.undone_at IS NULL"
                ).bindparams(s=session_id)
            ).scalars().all() == [1]
        # (on the way down, 0004 put the matrix back where that revision kept it)
        assert "dataset_chunks" not in tables
        with engine.connect() as connection:
            assert bytes(connection.execute(text("SELECT features FROM datasets WHERE id = 1")).scalar_one()) == matrix
    finally:
        engine.dispose()
