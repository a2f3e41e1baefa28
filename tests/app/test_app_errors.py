"""What a page is told when a call is refused or the database fails under it: the service's own error.

Storage refusing (a name taken), the database failing (a full disk) and core refusing the input (a CSV file
that cannot be read) leave the service as ``ServiceError`` (``DatabaseUnavailable`` for the database), with
the message the person reads and the original error as the cause; the page says it in its own box, with the
form still there to try again, never in Streamlit's generic error box.
"""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import OperationalError

from app.services import DatabaseUnavailable, MarginLab, ServiceError
from app.services.errors import translated
from storage import teams
from storage.errors import CorruptDatabaseError, NotFoundError
from tests.app import test_app
from tests.app.test_app import PASSWORD, shown, start_app

db_url = test_app.db_url  # the same fixture: a temporary SQLite file in MARGINLAB_DATABASE_URL

DISK_FULL = "database or disk is full"
BAD_CSV = b"a,b,label\n1,2,yes\n3,oops,no\n5,6,yes\n"


def full_disk(*args, **kwargs):
    raise OperationalError("INSERT INTO accounts ...", {}, sqlite3.OperationalError(DISK_FULL))


def team_page_adds(at, name: str):
    at.switch_page("views/team.py").run()
    at.text_input(key="account_name").input(name)
    at.button(key="FormSubmitter:add_account-Add").click().run()
    assert not at.exception, at.exception  # (no generic error box)
    return at


def test_a_name_taken_is_refused_in_the_service_s_words_with_storage_s_error_as_the_cause(db_url):
    at = start_app("ada")
    svc = MarginLab.from_url(db_url)
    with pytest.raises(ServiceError, match=r"^An account named 'ada' exists already\.$") as refused:
        svc.create_account(svc.sign_in("ada", PASSWORD), name="ada", password=None)
    assert isinstance(refused.value.__cause__, teams.DuplicateAccountError)
    team_page_adds(at, "ada")
    assert shown(at.error) == ["An account named 'ada' exists already."]
    assert at.text_input(key="account_name")  # the form stays: another name can be tried


def test_a_full_disk_at_a_call_is_said_in_the_app_s_words_with_a_way_on(db_url, monkeypatch):
    at = start_app("ada")
    svc = MarginLab.from_url(db_url)
    me = svc.sign_in("ada", PASSWORD)
    with monkeypatch.context() as full:
        full.setattr(teams, "create_account", full_disk)
        with pytest.raises(DatabaseUnavailable) as failed:
            svc.create_account(me, name="bob", password=None)
        said = str(failed.value)
        assert said.startswith(f"The database could not be used just now ({DISK_FULL}).") and "free some disk" in said
        assert isinstance(failed.value.__cause__, OperationalError)
        team_page_adds(at, "bob")
        assert shown(at.error) == [said]  # nothing of SQLAlchemy's statement or class names
    team_page_adds(at, "bob")  # room again: the same form adds the account
    assert not shown(at.error) and "bob" in {a.name for a in svc.accounts()}


def test_a_csv_that_cannot_be_read_is_refused_in_the_service_s_words_naming_the_file(db_url):
    from core.datasets import DataError

    svc = MarginLab.from_url(db_url)
    with pytest.raises(ServiceError) as refused:
        svc.import_csv(BAD_CSV, name="bad", label_column="label", positive="yes")
    assert isinstance(refused.value.__cause__, DataError) and str(refused.value) == str(refused.value.__cause__)
    at = start_app()
    at.switch_page("views/data.py").run()
    at.file_uploader(key="upload").upload("bad.csv", BAD_CSV, "text/csv").run()
    [b for b in at.button if b.key == "upload_import"][0].click().run()
    assert not at.exception, at.exception
    (error,) = shown(at.error)
    assert error == str(refused.value).replace("data: ", "bad.csv: ", 1) and "'oops'" in error and "row 2" in error
    assert [b for b in at.button if b.key == "upload_import"]  # the form stays: choose other settings, or a file


def test_a_database_that_is_not_marginlab_s_is_unavailable_when_the_service_opens_it(tmp_path):
    from app.services import startup

    path = tmp_path / "notes.db"
    path.write_bytes(b"the minutes of the meeting, not a database\n" * 200)
    with pytest.raises(DatabaseUnavailable, match="is not a SQLite database") as failed:
        startup.open_service(f"sqlite:///{path}", preload=False)
    assert isinstance(failed.value.__cause__, CorruptDatabaseError)


def test_only_the_outermost_call_translates_inside_the_service_storage_s_errors_stay_as_they_are():
    seen = []
    with pytest.raises(ServiceError, match="^Session 9 does not exist.$") as outside:
        with translated():
            try:
                with translated():  # a call from inside the service
                    raise NotFoundError("Session 9 does not exist.")
            except NotFoundError as error:  # still storage's: the service's own handling goes on
                seen.append(error)
                raise
    assert outside.value.__cause__ is seen[0]
    with pytest.raises(ValueError, match="not translated"), translated():  # a bug stays a bug
        raise ValueError("not translated")
    with pytest.raises(ServiceError, match="^asked$"), translated(also=(ValueError,)):
        raise ValueError("asked")
