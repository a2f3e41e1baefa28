"""Databases for the tests: SQLite files and a throwaway PostgreSQL server.

``engine`` (and ``database_url``) are parametrized over both engines, so a
test that takes one runs once on a SQLite file and once on a real PostgreSQL
server. The server is a cluster in a temporary directory, started once per
test run with the ``initdb``/``pg_ctl`` of Debian's ``postgresql`` package
(``make test`` installs it), listening only on a Unix socket inside that
directory, and stopped at the end. PostgreSQL refuses to run as root: when
the tests run as root, the cluster runs as the ``postgres`` user (or
``nobody``). The cluster does not fsync: the tests kill clients, never the
server, and a commit that returned is in the server's memory either way.

Without the binaries, or when the server does not start, PostgreSQL tests
are skipped with the reason, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import itertools
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# The property tests draw the same examples on every run and machine, so that a red run means a change
# broke something. MARGINLAB_HYPOTHESIS=explore draws new examples each run, to search for new failures.
# No example has a deadline: how long one takes depends on the machine's load, not on the code.
settings.register_profile("suite", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("MARGINLAB_HYPOTHESIS", "suite"))

#: the engines every storage guarantee is tested on
ENGINES = ("sqlite", "postgresql")
#: the same as fixture parameters: a test on the PostgreSQL server is marked ``postgresql`` (a slow lane)
ENGINE_PARAMS = [pytest.param(name, marks=[pytest.mark.postgresql] if name == "postgresql" else []) for name in ENGINES]

POSTGRESQL_BIN_ROOT = Path("/usr/lib/postgresql")  # Debian's layout: /usr/lib/postgresql/<major>/bin
POSTGRESQL_USER = "marginlab"
TEMPLATE_DATABASE = "marginlab_template"
SOCKET_PATH_LIMIT = 100  # bytes of a Unix socket path (the kernel's limit is 107 with the file name)


def find_postgresql_bindir() -> Path | None:
    """The newest Debian PostgreSQL ``bin`` folder with ``initdb``, else the one on PATH."""

    def major(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", path.parent.parent.name)) or (0,)

    found = sorted(POSTGRESQL_BIN_ROOT.glob("*/bin/initdb"), key=major)
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


class PostgresServer:
    """A PostgreSQL cluster in a temporary directory, reached through a Unix socket there."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.folder = Path(tempfile.mkdtemp(prefix="marginlab-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.port = 5432  # names the socket file only: nothing listens on TCP
        self._run_as: pwd.struct_passwd | None = None
        self._names = itertools.count()
        if os.geteuid() == 0:
            self._run_as = _unprivileged_user()
            os.chown(self.folder, self._run_as.pw_uid, self._run_as.pw_gid)
        os.chmod(self.folder, 0o700)

    # -- lifetime
    def start(self) -> None:
        socket = self.folder / f".s.PGSQL.{self.port}"
        if len(str(socket).encode()) > SOCKET_PATH_LIMIT:
            raise RuntimeError(f"the socket path {socket} is too long for a Unix socket; set TMPDIR shorter")
        self._run(
            "initdb", "-D", self.data, "-U", POSTGRESQL_USER, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"
        )
        options = f"-k {self.folder} -p {self.port} -c listen_addresses='' -c fsync=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "-o", options, "start")
        self.create_database(name=TEMPLATE_DATABASE)

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", self.data, "-w", "-t", "60", "-m", "fast", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _run(self, program: str, *args: object) -> None:
        command = [str(self.bindir / program), *map(str, args)]
        extra = {}
        if self._run_as is not None:
            extra = dict(user=self._run_as.pw_uid, group=self._run_as.pw_gid, extra_groups=[])
        result = subprocess.run(
            command, cwd=self.folder, capture_output=True, text=True, timeout=120, check=False, **extra
        )
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{program} failed (exit {result.returncode}): {result.stderr.strip() or result.stdout.strip()}\n{log}"
            )

    # -- databases
    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{POSTGRESQL_USER}@/{database}?host={self.folder}&port={self.port}"

    def execute(self, statement: str) -> None:
        """Run one statement (outside a transaction) in the server's ``postgres`` database."""
        from sqlalchemy import create_engine, text
        from sqlalchemy.pool import NullPool

        engine = create_engine(self.url("postgres"), isolation_level="AUTOCOMMIT", poolclass=NullPool)
        try:
            with engine.connect() as connection:
                connection.execute(text(statement))
        finally:
            engine.dispose()

    def create_database(self, template: str = "template0", name: str | None = None) -> str:
        """A new database (empty, or a copy of ``template``); return its name."""
        name = name or f"test_{os.getpid()}_{next(self._names)}"
        self.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}" STRATEGY FILE_COPY')
        return name

    def drop_database(self, name: str) -> None:
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _unprivileged_user() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root, and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL as")


def _unavailable(reason: str) -> None:
    message = f"PostgreSQL server for the tests: {reason}"
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail(message + " (CI=true: PostgreSQL tests must run)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def postgresql_server() -> Iterator[PostgresServer]:
    """A running throwaway PostgreSQL server with a migrated template database."""
    bindir = find_postgresql_bindir()
    if bindir is None:
        _unavailable("no initdb found (install Debian's 'postgresql' package; 'make test' does)")
    try:
        server = PostgresServer(bindir)
    except (OSError, RuntimeError) as error:
        _unavailable(f"cannot prepare its folder: {error}")
    try:
        server.start()
        import storage

        engine = storage.make_engine(server.url(TEMPLATE_DATABASE))
        try:
            storage.init_db(engine)
        finally:
            engine.dispose()
    except Exception as error:  # noqa: BLE001 - any start failure is reported with its reason
        server.stop()
        _unavailable(f"did not start: {error}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgresql_database(postgresql_server) -> Iterator[str]:
    """The URL of a new, empty database on the test server (dropped afterwards)."""
    name = postgresql_server.create_database()
    yield postgresql_server.url(name)
    postgresql_server.drop_database(name)


@pytest.fixture(params=ENGINE_PARAMS)
def database_url(request, tmp_path) -> str:
    """The URL of a new, empty database: a SQLite file, or a database on the PostgreSQL test server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'marginlab.db'}"
    return request.getfixturevalue("postgresql_database")


@pytest.fixture(params=ENGINE_PARAMS)
def engine(request, tmp_path):
    """An engine on a new MarginLab database (schema at head), disposed of afterwards."""
    import storage

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'marginlab.db'}"
        engine = storage.make_engine(url)
        storage.init_db(engine)
        yield engine
        engine.dispose()
        return
    server = request.getfixturevalue("postgresql_server")
    name = server.create_database(template=TEMPLATE_DATABASE)
    engine = storage.make_engine(server.url(name))
    storage.init_db(engine)  # finds the schema at head: changes nothing
    yield engine
    engine.dispose()
    server.drop_database(name)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``postgresql`` every test that asks for the PostgreSQL server itself (the engine-parametrized
    fixtures mark their PostgreSQL parameter), so that ``-m "not postgresql"`` needs no server."""
    for item in items:
        if "postgresql_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgresql)
