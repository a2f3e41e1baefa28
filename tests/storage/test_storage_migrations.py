"""Schema migrations (Alembic): from an empty database and from schema version 1, on SQLite and PostgreSQL.

Schema version 1 is the schema MarginLab wrote with ``create_all`` before it
had migrations; ``tests/data/storage_schema_v1_*.sql`` hold that DDL as it
was, so that these tests keep checking the upgrade from a real version-1
database when the models change.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import MetaData, func, inspect, select, text

import storage
from storage import migrations
from storage.models import SCHEMA_VERSION, Base, DatasetChunk, SchemaInfo

DATA = Path(__file__).resolve().parents[1] / "data"
REPO_ROOT = Path(__file__).resolve().parents[2]


def schema_differences(engine) -> list:
    """Alembic's autogenerate comparison of the database with the models (empty: the same schema)."""
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return compare_metadata(context, Base.metadata)


def recorded_revision(engine) -> str | None:
    with engine.connect() as connection:
        return migrations.current_revision(connection)


def test_upgrade_of_an_empty_database_gives_exactly_the_models_schema(database_url):
    engine = storage.make_engine(database_url)
    try:
        assert storage.init_db(engine) == SCHEMA_VERSION
        assert schema_differences(engine) == []
        assert recorded_revision(engine) == migrations.head_revision()
        assert storage.schema_version(engine) == SCHEMA_VERSION
        assert migrations.schema_version_of(migrations.head_revision()) == SCHEMA_VERSION
        # a second start finds nothing to do
        assert storage.init_db(engine) == SCHEMA_VERSION
        with engine.connect() as connection:
            assert connection.execute(select(func.count()).select_from(SchemaInfo)).scalar_one() == 1
    finally:
        engine.dispose()


def create_schema_v1(engine) -> None:
    """What MarginLab's init_db did before migrations: the version-1 tables and the schema_info row."""
    script = (DATA / f"storage_schema_v1_{engine.dialect.name}.sql").read_text()
    statements = [part.strip() for part in script.split("\n;\n")]
    with engine.begin() as connection:
        for statement in statements:
            lines = [line for line in statement.splitlines() if not line.startswith("--")]
            if any(line.strip() for line in lines):
                connection.exec_driver_sql("\n".join(lines))
        connection.execute(text("INSERT INTO schema_info (id, version) VALUES (1, 1)"))


def version_1_rows() -> dict[str, list[dict]]:
    """A dataset with items, an annotator, a session with labels (one undone), a snapshot and a comparison."""
    at = dt.datetime(2025, 5, 17, 9, 30, 15, 123456, tzinfo=dt.UTC)
    X = np.array([[0.1 + 0.2, -1e-300], [2.5, 1e300], [-0.0, 7.0]])
    snapshot = io.BytesIO()
    np.savez(snapshot, alpha=np.array([0.5, -0.25]), support=np.array([0, 2]))
    return {
        "datasets": [
            dict(
                id=1, name="notes ünïcødé", source="notes.csv", feature_names=["a", "=b"], n_rows=3, n_features=2,
                features=X.astype("<f8").tobytes(), true_labels=np.array([1, -1, 1], "<i1").tobytes(),
                display_kind="text", image_width=None, image_height=None, text_column="body",
                content_hash="c" * 64, meta={"classes": {"negative": "ham", "positive": "spam"}}, created_at=at,
            )
        ],
        "items": [
            dict(id=k + 1, dataset_id=1, position=k, external_key=f"key-{k}", display_text=f"text\n{k}")
            for k in range(3)
        ],
        "annotators": [dict(id=1, name="ada", created_at=at)],
        "labelling_sessions": [
            dict(
                id=1, dataset_id=1, annotator_id=1, strategy="near-boundary", solver="incremental",
                solver_params={"C": 1.0, "gamma": "scale"}, seed=7, status="active", created_at=at, updated_at=at,
            )
        ],
        "labels": [
            dict(
                id=k + 1, session_id=1, item_id=k + 1, annotator_id=1, value=(1, -1, 0)[k], created_at=at,
                strategy="near-boundary", solver="incremental", decision_value=None if k == 0 else k / 3,
                model_version=k, update_ms=0.5 * k, query_ms=1.25, undone_at=at if k == 2 else None,
            )
            for k in range(3)
        ],
        "model_snapshots": [
            dict(id=1, session_id=1, n_events=2, last_label_id=2, arrays=snapshot.getvalue(), meta={"k": 2},
                 created_at=at)
        ],
        "comparison_results": [
            dict(id=1, dataset_id=1, config={"budget": 10}, rows_csv="strategy,auc\nrandom,0.5\n",
                 summary={"aulc": {"random": 0.7}}, created_at=at)
        ],
    }  # fmt: skip


def table_rows(engine, tables: list[str]) -> dict[str, list[dict]]:
    """Every row of ``tables`` as the database holds them now (reflected, so independent of the models)."""
    reflected = MetaData()
    with engine.connect() as connection:
        reflected.reflect(connection, only=tables)
        return {
            name: [dict(row._mapping) for row in connection.execute(select(table).order_by(*table.primary_key))]
            for name, table in reflected.tables.items()
        }


def test_upgrade_of_a_schema_version_1_database_keeps_every_row(database_url):
    engine = storage.make_engine(database_url)
    try:
        create_schema_v1(engine)
        reflected = MetaData()
        with engine.begin() as connection:
            reflected.reflect(connection)
            for table in reflected.sorted_tables:
                rows = version_1_rows().get(table.name)
                if rows:
                    connection.execute(table.insert(), rows)
            if engine.dialect.name == "postgresql":  # rows were given their ids: move the sequences past them
                for table in reflected.sorted_tables:
                    connection.execute(
                        text(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), max(id)) FROM {table.name}")
                    )
        before = table_rows(engine, list(version_1_rows()))
        assert storage.schema_version(engine) == 1 and recorded_revision(engine) is None

        assert storage.init_db(engine) == SCHEMA_VERSION
        assert recorded_revision(engine) == migrations.head_revision()
        assert schema_differences(engine) == []
        after = table_rows(engine, list(version_1_rows()))
        moved = {}  # (schema version 4 stores each feature matrix in pieces: datasets.features is left empty)
        for row in before["datasets"]:
            moved[row["id"]] = row.pop("features")
        for row in after["datasets"]:
            assert row.pop("features") == b""
        for table, rows in before.items():  # every version-1 value of every row is still there
            assert len(after[table]) == len(rows), table
            for old, new in zip(rows, after[table], strict=True):
                assert {column: new[column] for column in old if column in new} == old, table
        with engine.connect() as connection:
            for dataset_id, blob in moved.items():
                pieces = connection.execute(
                    select(DatasetChunk.start, DatasetChunk.data)
                    .where(DatasetChunk.dataset_id == dataset_id)
                    .order_by(DatasetChunk.start)
                ).all()
                assert b"".join(bytes(data) for _, data in pieces) == bytes(blob) and pieces[0][0] == 0

        # and the repository reads them as before
        X, y, names, display = storage.load_dataset_arrays(engine, 1)
        np.testing.assert_array_equal(X, np.frombuffer(version_1_rows()["datasets"][0]["features"]).reshape(3, 2))
        assert names == ["a", "=b"] and list(y) == [1, -1, 1] and display.item_keys == ("key-0", "key-1", "key-2")
        events = storage.label_events(engine, 1)
        assert [(e.item_index, e.value, e.decision_value) for e in events] == [(0, 1, None), (1, -1, 1 / 3)]
        snapshot = storage.latest_snapshot(engine, 1)
        assert snapshot.n_events == 2 and list(snapshot.arrays["support"]) == [0, 2]
        assert storage.load_comparison(engine, 1).summary == {"aulc": {"random": 0.7}}
        # and new rows get new ids
        event = storage.record_label(
            engine, 1, item_index=2, value=1, annotator="bob", strategy="random", solver="lasvm"
        )
        assert event.label_id == 4
    finally:
        engine.dispose()


def test_upgrade_cuts_large_matrices_into_pieces_that_read_back_bit_for_bit(database_url):
    """Migration 0004 on matrices of several pieces: a dense one is cut at row boundaries (a meta
    that names the dense format too), a sparse archive anywhere; both read back as they were."""
    import scipy.sparse as sp
    from alembic import command

    from storage.validation import encode_features

    rng = np.random.default_rng(8)
    dense = rng.standard_normal((3001, 100))
    sparse = sp.random(4000, 30_000, density=0.004, format="csr", random_state=rng)
    engine = storage.make_engine(database_url)
    try:
        with engine.begin() as connection:  # a database at the revision before, its matrices in datasets.features
            command.upgrade(migrations.alembic_config(connection), "0003_teams")
            tables = MetaData()
            tables.reflect(connection, only=["datasets"])
            at = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
            rows = []
            for k, (X, meta) in enumerate([(dense, {"feature_format": "dense"}), (sparse, {"feature_format": "csr"})]):
                blob, _ = encode_features(X)
                assert len(blob) > 2 * 2**20
                rows.append(
                    dict(
                        id=k + 1,
                        name=f"m{k}",
                        source="",
                        feature_names=[f"f{j}" for j in range(X.shape[1])],
                        n_rows=X.shape[0],
                        n_features=X.shape[1],
                        features=blob,
                        true_labels=None,
                        display_kind="table",
                        image_width=None,
                        image_height=None,
                        text_column=None,
                        content_hash=str(k) * 64,
                        meta=meta,
                        created_at=at,
                    )
                )
            connection.execute(tables.tables["datasets"].insert(), rows)
        assert storage.init_db(engine) == SCHEMA_VERSION
        with engine.connect() as connection:
            lengths = connection.execute(
                select(DatasetChunk.start, func.length(DatasetChunk.data))
                .where(DatasetChunk.dataset_id == 1)
                .order_by(DatasetChunk.start)
            ).all()
        assert len(lengths) == 3 and all(n % 800 == 0 for _, n in lengths)  # whole rows of 100 float64
        X, _, _, _ = storage.load_dataset_arrays(engine, 1)
        assert X.tobytes() == dense.tobytes()
        edges = [0, lengths[1][0] // 800 - 1, lengths[1][0] // 800, 3000]
        assert storage.load_feature_rows(engine, 1, edges).tobytes() == dense[edges].tobytes()
        S, _, _, _ = storage.load_dataset_arrays(engine, 2)
        assert (S != sparse).nnz == 0 and S.shape == sparse.shape
    finally:
        engine.dispose()


def test_a_database_with_a_revision_from_a_newer_marginlab_is_refused_and_left_alone(database_url):
    engine = storage.make_engine(database_url)
    try:
        storage.init_db(engine)
        with engine.begin() as connection:
            connection.execute(text("UPDATE alembic_version SET version_num = 'f00d_from_the_future'"))
        before = table_rows(engine, ["alembic_version", "schema_info"])
        with pytest.raises(storage.SchemaVersionError, match="newer MarginLab") as caught:
            storage.init_db(engine)
        assert "f00d_from_the_future" in str(caught.value)
        assert table_rows(engine, ["alembic_version", "schema_info"]) == before
    finally:
        engine.dispose()


def open_database(url: str) -> None:
    """Child process: wait for the go file, then open (initialise) the database."""
    go_file = Path(os.environ["MARGINLAB_TEST_GO_FILE"])
    while not go_file.exists():
        time.sleep(0.005)
    engine = storage.make_engine(url)
    print(storage.init_db(engine))
    engine.dispose()


@pytest.mark.processes
def test_processes_opening_one_empty_database_at_once_create_it_once(database_url, tmp_path):
    go_file = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "MARGINLAB_TEST_GO_FILE": str(go_file)}
    opening = f"from tests.storage.test_storage_migrations import open_database; open_database({database_url!r})"
    command = [sys.executable, "-c", opening]
    children = [
        subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    go_file.touch()
    results = [child.communicate(timeout=120) for child in children]
    for child, (output, errors) in zip(children, results, strict=True):
        assert child.returncode == 0, errors
        assert output.strip() == str(SCHEMA_VERSION)
    engine = storage.make_engine(database_url)
    try:
        assert schema_differences(engine) == []
        with engine.connect() as connection:
            assert connection.execute(select(func.count()).select_from(SchemaInfo)).scalar_one() == 1
    finally:
        engine.dispose()


def test_migration_0006_keeps_every_account_and_moves_the_lock_to_sign_in_throttles(database_url):
    """Schema version 6 drops ``accounts.locked_until`` (a lock for everyone: anybody could keep an owner
    out) for ``sign_in_throttles``; every other value of every account is kept, both ways."""
    from alembic import command

    from app.services import MarginLab
    from app.services.accounts import hash_password
    from storage import teams

    engine = storage.make_engine(database_url)
    try:
        with engine.begin() as connection:
            command.upgrade(migrations.alembic_config(connection), "0005_project_snapshots")
        teams.create_account(engine, name="olga", role="owner", password_hash=hash_password("a-long-password"))
        teams.create_account(engine, name="ann", role="annotator", password_hash=None)
        with engine.begin() as connection:  # ann was locked the way schema version 5 locked
            connection.execute(
                text("UPDATE accounts SET failed_attempts = 7, locked_until = :until WHERE role = 'annotator'"),
                {"until": dt.datetime(2030, 1, 1, tzinfo=dt.UTC)},
            )
        before = table_rows(engine, ["accounts", "annotators"])
        assert storage.init_db(engine) == SCHEMA_VERSION
        assert schema_differences(engine) == []
        after = table_rows(engine, ["accounts", "annotators"])
        assert after["annotators"] == before["annotators"]
        kept = [{k: v for k, v in row.items() if k != "locked_until"} for row in before["accounts"]]
        assert after["accounts"] == kept
        assert table_rows(engine, ["sign_in_throttles"]) == {"sign_in_throttles": []}
        svc = MarginLab(engine)
        svc.failure_delay_s = 0
        assert svc.sign_in("olga", "a-long-password").is_owner
        assert table_rows(engine, ["sign_in_throttles"])["sign_in_throttles"]  # (counted, then refunded)
        with engine.begin() as connection:
            command.downgrade(migrations.alembic_config(connection), "0005_project_snapshots")
        down = table_rows(engine, ["accounts"])["accounts"]
        assert [row.pop("locked_until") for row in down] == [None, None]
        assert [{k: v for k, v in row.items() if k != "last_sign_in_at"} for row in down] == [
            {k: v for k, v in row.items() if k != "last_sign_in_at"} for row in after["accounts"]
        ]
        with engine.connect() as connection:
            assert not inspect(connection).has_table("sign_in_throttles")
            assert connection.execute(text("SELECT version FROM schema_info")).scalar_one() == 5
    finally:
        engine.dispose()


def test_migration_0007_adds_browser_sign_ins_and_keeps_every_account(database_url):
    """Schema version 7 adds ``browser_sign_ins`` (sign-ins kept by a browser) and changes nothing else,
    both ways."""
    from alembic import command

    from app.services import MarginLab
    from app.services.accounts import hash_password
    from storage import teams

    engine = storage.make_engine(database_url)
    try:
        with engine.begin() as connection:
            command.upgrade(migrations.alembic_config(connection), "0006_sign_in_throttles")
        teams.create_account(engine, name="olga", role="owner", password_hash=hash_password("a-long-password"))
        before = table_rows(engine, ["accounts", "annotators"])
        assert storage.init_db(engine) == SCHEMA_VERSION
        assert schema_differences(engine) == []
        assert table_rows(engine, ["accounts", "annotators", "browser_sign_ins"]) == {**before, "browser_sign_ins": []}
        svc = MarginLab(engine)
        who, ticket = svc.begin_browser_sign_in(svc.sign_in("olga", "a-long-password"))
        assert svc.browser_identity(svc.redeem_browser_ticket(ticket).token) == who
        with engine.begin() as connection:
            command.downgrade(migrations.alembic_config(connection), "0006_sign_in_throttles")
        with engine.connect() as connection:
            assert not inspect(connection).has_table("browser_sign_ins")
            assert connection.execute(text("SELECT version FROM schema_info")).scalar_one() == 6
        assert table_rows(engine, ["annotators"]) == {"annotators": before["annotators"]}
    finally:
        engine.dispose()
