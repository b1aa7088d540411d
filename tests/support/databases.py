"""Test databases on both backends: SQLite files, and PostgreSQL databases on a test server.

The suite runs on SQLite alone unless ``ROOMS_TEST_DATABASE`` names a PostgreSQL *server*, e.g.
``postgresql://postgres@127.0.0.1:5432/postgres`` (a database the user can connect to, with the
right to create databases; the suite never writes to that database itself). Then the
database-backed tests of :data:`BOTH_BACKENDS` run once per backend (see ``tests/conftest.py``).

What a test gets on PostgreSQL (measured on this machine, see the docs of :class:`PostgresServer`):

- ``db_url``: an empty database at the newest schema. One database per test module, cloned
  from a template migrated once per session; before each test its tables are truncated (ids
  restart at 1) and every other connection to it is ended, so a pooled connection or a killed
  child process of the previous test cannot leak rows or locks into this one;
- ``blank_db_url``: a brand-new empty database without tables (for migration tests), dropped
  after the test.

Every database the session created is dropped at its end (``drop_all``).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from storage import Database, normalize_url

TEST_DATABASE_ENV = "ROOMS_TEST_DATABASE"
#: Folders under ``tests/`` whose database-backed tests run on both backends when a server is set.
BOTH_BACKENDS = ("storage", "conversation/rooms", "conversation/worker", "resilience")
BACKENDS = ("sqlite", "postgresql")

# Tables are listed by the catalogue, not by hand, so a table added by a later migration is
# truncated too; Alembic's version table is the schema's, not a test's.
_TABLES = (
    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
    "AND tablename <> 'alembic_version' ORDER BY tablename"
)
_OTHER_BACKENDS = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)
# amcheck verifies every B-tree index against its table and the heap pages themselves: the
# closest PostgreSQL has to SQLite's PRAGMA integrity_check.
_CHECK_INDEXES = """
SELECT c.relname, bt_index_parent_check(c.oid, true)
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_am am ON am.oid = c.relam
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE am.amname = 'btree' AND n.nspname = 'public'
"""
_CHECK_HEAPS = """
SELECT t.tablename, v.blkno, v.msg
FROM pg_tables t, LATERAL verify_heapam(format('public.%I', t.tablename)::regclass) v
WHERE t.schemaname = 'public'
"""


def configured_server_url() -> str | None:
    """The server URL from ``ROOMS_TEST_DATABASE`` (normalised), or ``None`` when unset."""
    value = os.environ.get(TEST_DATABASE_ENV, "").strip()
    if not value:
        return None
    url = normalize_url(value)
    if sa.make_url(url).get_backend_name() != "postgresql":
        raise ValueError(
            f"{TEST_DATABASE_ENV}={value!r} must name a PostgreSQL server, e.g. "
            "postgresql://postgres@127.0.0.1:5432/postgres (SQLite is always tested)"
        )
    return url


def is_postgres(url: str) -> bool:
    return sa.make_url(normalize_url(url)).get_backend_name() == "postgresql"


class PostgresServer:
    """A PostgreSQL server the tests may create and drop databases on.

    Costs measured here (PostgreSQL 15, fsync off, idle machine): cloning the migrated template
    and opening it ~0.10 s; creating a blank database and migrating it ~0.3 s; truncating the
    tables of a module's database and ending its other connections ~0.02 s. Hence one database
    per module, truncated per test.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.admin = sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        self.prefix = f"rooms_test_{uuid.uuid4().hex[:8]}"
        self.created: list[str] = []
        self._template: str | None = None
        self._modules: dict[str, str] = {}
        self._tables: dict[str, list[str]] = {}

    def url_of(self, name: str) -> str:
        return sa.make_url(self.url).set(database=name).render_as_string(hide_password=False)

    def create(self, *, template: str | None = None) -> str:
        """A new database (a copy of ``template``, else empty); returns its URL."""
        name = f"{self.prefix}_{len(self.created)}"
        # FILE_COPY: a straight copy of the template's files, 2x faster than WAL_LOG for a
        # small database when fsync is off (the test cluster's setting); with fsync on it is
        # slower, so only the test server should be run this way.
        clause = f' TEMPLATE "{template}" STRATEGY FILE_COPY' if template else ""
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"{clause}')
        self.created.append(name)
        return self.url_of(name)

    def drop(self, url: str) -> None:
        name = sa.make_url(url).database
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self.created:
            self.created.remove(name)

    def template(self) -> str:
        """The name of a database at the newest schema (with amcheck), made once per session."""
        if self._template is None:
            url = self.create()
            Database(url).dispose()
            engine = sa.create_engine(url, poolclass=NullPool)
            with engine.begin() as conn:
                conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS amcheck")
            engine.dispose()
            self._template = str(sa.make_url(url).database)
        return self._template

    def module_database(self, module: str) -> str:
        """The URL of ``module``'s database, emptied: no rows, ids from 1, no other sessions."""
        url = self._modules.get(module)
        if url is None:
            url = self._modules[module] = self.create(template=self.template())
        else:
            self.empty(url)
        return url

    def empty(self, url: str) -> None:
        engine = sa.create_engine(url, poolclass=NullPool)
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql(_OTHER_BACKENDS)
                tables = self._tables.get(url)
                if tables is None:
                    tables = self._tables[url] = list(conn.exec_driver_sql(_TABLES).scalars())
                joined = ", ".join(f'"{t}"' for t in tables)
                conn.exec_driver_sql(f"TRUNCATE {joined} RESTART IDENTITY CASCADE")
        finally:
            engine.dispose()

    def drop_all(self) -> None:
        for name in list(reversed(self.created)):
            self.drop(self.url_of(name))
        self.admin.dispose()


_server: PostgresServer | None = None


def server() -> PostgresServer | None:
    """The session's test server (``None`` when ``ROOMS_TEST_DATABASE`` is unset)."""
    global _server
    url = configured_server_url()
    if url is None:
        return None
    if _server is None:
        _server = PostgresServer(url)
    return _server


def close_server() -> None:
    global _server
    if _server is not None:
        _server.drop_all()
        _server = None


# -- backend-aware checks -----------------------------------------------------------------------


def _sqlite_path(target: str | Path) -> Path:
    text = str(target)
    return Path(text.removeprefix("sqlite:///")) if text.startswith("sqlite:") else Path(text)


def integrity(target: str | Path) -> str:
    """``"ok"`` when the database is sound, else what is wrong.

    ``target`` is a SQLite file path or any database URL. SQLite: ``PRAGMA integrity_check``.
    PostgreSQL: amcheck's ``bt_index_parent_check`` on every index (heap included) and
    ``verify_heapam`` on every table.
    """
    if isinstance(target, str) and is_postgres(target):
        engine = sa.create_engine(normalize_url(target), poolclass=NullPool)
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS amcheck")
                conn.execute(sa.text(_CHECK_INDEXES)).all()  # raises on a corrupt index
                problems = [
                    f"{t} block {b}: {m}" for t, b, m in conn.execute(sa.text(_CHECK_HEAPS))
                ]
        finally:
            engine.dispose()
        return "ok" if not problems else "; ".join(problems)
    import sqlite3

    with sqlite3.connect(_sqlite_path(target)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def row_counts(
    target: str | Path, tables: tuple[str, ...] = ("rooms", "events", "leases")
) -> dict[str, int]:
    """Rows per table; ``target`` is a SQLite file path or any database URL."""
    if isinstance(target, str) and is_postgres(target):
        engine = sa.create_engine(normalize_url(target), poolclass=NullPool)
        try:
            with engine.connect() as conn:
                return {
                    table: int(
                        conn.exec_driver_sql(f'SELECT count(*) FROM "{table}"').scalar() or 0
                    )
                    for table in tables
                }
        finally:
            engine.dispose()
    import sqlite3

    with sqlite3.connect(_sqlite_path(target)) as conn:
        return {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
            for table in tables
        }


def stored_bytes(url: str) -> bytes:
    """Every byte the database holds, to scan for what must never be stored (secrets).

    SQLite: the file after a checkpoint, with its WAL and journal. PostgreSQL: a plain ``pg_dump``
    of the database (schema and every row, as text).
    """
    if is_postgres(url):
        import subprocess

        libpq_url = sa.make_url(normalize_url(url)).set(drivername="postgresql")
        return subprocess.run(
            [_pg_dump(), "--no-owner", libpq_url.render_as_string(hide_password=False)],
            check=True,
            capture_output=True,
            timeout=60,
        ).stdout
    import sqlite3

    path = _sqlite_path(url)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    blobs = [path.read_bytes()]
    for suffix in ("-wal", "-shm", "-journal"):
        extra = Path(str(path) + suffix)
        if extra.exists():
            blobs.append(extra.read_bytes())
    return b"".join(blobs)


def _pg_dump() -> str:
    import shutil

    # Debian puts the server's own version under /usr/lib/postgresql; pg_dump must not be older.
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / "pg_dump").exists():
            return str(folder / "pg_dump")
    found = shutil.which("pg_dump")
    if found is None:
        raise FileNotFoundError("pg_dump is missing: apt-get install -y postgresql-client")
    return found


__all__ = [
    "BACKENDS",
    "BOTH_BACKENDS",
    "TEST_DATABASE_ENV",
    "PostgresServer",
    "close_server",
    "configured_server_url",
    "integrity",
    "is_postgres",
    "row_counts",
    "server",
    "stored_bytes",
]
