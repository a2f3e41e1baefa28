"""Schema migrations: Alembic, run by ``storage.init_db`` inside its own transaction.

MarginLab finds its migrations itself; nobody needs an ``alembic.ini``.
``init_db`` upgrades every database it opens to the newest revision
(``head``). Each revision module says which ``schema_info.version`` it
brings the database to (``schema_version``); ``storage.models.SCHEMA_VERSION``
is the one of ``head``.

Changing the schema: change the models, bump ``SCHEMA_VERSION``, and add a
revision under ``versions/`` that revises the current head, sets
``schema_version`` and updates ``schema_info`` (``script.py.mako`` is the
template). Alembic can draft it from a database at head::

    from alembic import command
    from storage import make_engine, init_db, migrations
    engine = make_engine("sqlite:///draft.db"); init_db(engine)
    with engine.begin() as connection:
        command.revision(migrations.alembic_config(connection), "what changed", autogenerate=True, rev_id="0002")

Review the draft (SQLite needs ``batch_alter_table`` for most changes) and
test it from an empty database and from the previous version.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

MIGRATIONS_DIR = Path(__file__).resolve().parent

#: the revision that is schema version 1, the schema from before migrations
BASELINE_REVISION = "0001"


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic configuration for MarginLab's migrations, running on ``connection``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


@lru_cache(maxsize=1)
def script_directory() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    head = script_directory().get_current_head()
    assert head is not None, "no migration under storage/migrations/versions"
    return head


def schema_version_of(revision: str) -> int | None:
    """The schema version a revision brings the database to; None for a revision this MarginLab does not know."""
    try:
        script = script_directory().get_revision(revision)
    except Exception:  # noqa: BLE001 - Alembic raises several kinds for an unknown or malformed id
        return None
    return None if script is None else int(script.module.schema_version)


def known_schema_versions() -> set[int]:
    return {int(script.module.schema_version) for script in script_directory().walk_revisions()}


def baseline_tables() -> tuple[str, ...]:
    return tuple(script_directory().get_revision(BASELINE_REVISION).module.TABLES)


def current_revision(connection: Connection) -> str | None:
    """The revision recorded in the database (``alembic_version``), or None."""
    return MigrationContext.configure(connection).get_current_revision()


def stamp_baseline(connection: Connection) -> None:
    """Record that a database from before migrations is at schema version 1 (runs no migration)."""
    command.stamp(alembic_config(connection), BASELINE_REVISION)


def upgrade_to_head(connection: Connection) -> None:
    """Run every migration the database has not had, in ``connection``'s transaction."""
    command.upgrade(alembic_config(connection), "head")
