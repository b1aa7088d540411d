"""The database handle: two engines (write and read), connection set-up, sessions, migrations.

``Database(url)`` is the one object every repository function takes. Opening it creates a blank
database or upgrades an older one to the newest schema (Alembic, see :mod:`storage.database.migrate`).

SQLite set-up (docs/design.md, "The database is the source of truth"), on every connection of both engines (a ``connect`` listener):
``journal_mode=WAL`` (readers never block the writer), ``busy_timeout`` (default 10 s: a writer waits
for the lock instead of failing), ``foreign_keys=ON`` (cascades and references hold),
``synchronous=FULL`` (a committed turn survives power loss: a lost turn would be regenerated
differently). The read engine's connections are also ``query_only``, so a write through it fails
loudly instead of taking the lock.

Transactions: the pysqlite driver is told not to emit its own ``BEGIN`` (SQLAlchemy's documented
recipe), and a ``begin`` listener emits ``BEGIN IMMEDIATE`` on the write engine, ``BEGIN`` on the
read engine. An IMMEDIATE transaction takes the write lock up front, so a read-then-write (seq =
max + 1) never fails with "database is locked" halfway, it waits for ``busy_timeout`` instead.
On PostgreSQL both engines use plain transactions (READ COMMITTED; the read engine is read-only)
and write functions lock the room's row with ``SELECT ... FOR UPDATE`` (see :mod:`storage.rooms.rows`).

PostgreSQL is reached through psycopg 3 (``postgresql://`` URLs are normalised to
``postgresql+psycopg://``, see :func:`storage.database.config.normalize_url`). Opening checks the server
once, before migrating: an unreachable server, a refused login, a missing database or a missing
driver raise :class:`~storage.errors.CannotOpenDatabase`, naming the URL (password masked) and the
fix, instead of a driver traceback from deep inside a migration.

Processes: a ``Database`` belongs to the process that opened it; after ``fork`` the child's first
session drops the inherited pooled connections (never closing the parent's) and opens its own.
Prefer opening a new ``Database`` in each process.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Engine, create_engine, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool
from sqlmodel import Session

from storage.coltypes import utcnow
from storage.database.config import database_url, display_url, normalize_url
from storage.errors import CannotOpenDatabase, DatabaseUnavailable, StorageValueError

log = logging.getLogger(__name__)

DEFAULT_BUSY_TIMEOUT_MS = 10_000
CONNECT_TIMEOUT_SECONDS = 10
SQLITE_PRAGMAS = ("journal_mode", "busy_timeout", "foreign_keys", "synchronous")


class Database:
    """A rooms database: its URL, a write engine, a read engine, and a clock.

    Guarantees:
    - after construction the schema is at the newest revision (or construction raised
      :class:`~storage.errors.UnsupportedDatabaseVersion` and changed nothing);
    - :meth:`write` sessions are serialised per database (SQLite: ``BEGIN IMMEDIATE``) and commit
      on normal exit, roll back on an exception;
    - :meth:`read` sessions never take the write lock and never wait for a writer (WAL snapshot);
    - ``clock()`` returns aware UTC datetimes; tests may pass their own clock (lease expiry uses it).

    ``url`` defaults to :func:`storage.database.config.database_url` (``ROOMS_DATABASE_URL`` or the data
    folder's ``rooms.db``). In-memory SQLite is refused: the two engines would see two databases.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        upgrade: bool = True,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
        clock: Callable[[], datetime] = utcnow,
        echo: bool = False,
    ) -> None:
        self.url = normalize_url(url) if url else database_url()
        parsed = make_url(self.url)
        self.dialect = parsed.get_backend_name()
        self.clock = clock
        if busy_timeout_ms < 10_000:
            raise StorageValueError(
                f"busy_timeout_ms={busy_timeout_ms} is too short; use at least 10000 (10 s) so "
                "writers wait for each other instead of failing with 'database is locked'"
            )
        self.busy_timeout_ms = busy_timeout_ms
        if self.is_sqlite:
            _prepare_sqlite_file(parsed.database)
        self.write_engine = _create_engine(self.url, write=True, busy_ms=busy_timeout_ms, echo=echo)
        self.read_engine = _create_engine(self.url, write=False, busy_ms=busy_timeout_ms, echo=echo)
        self._pid = os.getpid()
        if not self.is_sqlite:
            try:
                _check_server(self.url, self.read_engine)
            except BaseException:
                self.dispose()
                raise
        from storage.database.schema_head import at_head

        if at_head(self.read_engine):
            return  # already at the newest schema: Alembic is not even imported
        from storage.database import migrate  # local: migrate needs this module's Database type

        try:
            if upgrade:
                migrate.upgrade_to_head(self)
            else:
                migrate.ensure_at_head(self)
        except BaseException:
            self.dispose()
            raise

    @property
    def is_sqlite(self) -> bool:
        """Whether this is a SQLite database (else PostgreSQL or another server database)."""
        return self.dialect == "sqlite"

    def now(self) -> datetime:
        """The current time by this database's clock (aware, UTC)."""
        return self.clock()

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A write transaction: ``BEGIN IMMEDIATE`` on SQLite, committed when the block ends.

        Keep it to a few statements and never call a model inside it: every other writer of the
        database waits for it. Returned ORM objects stay readable after the block (no expiry).
        """
        self._after_fork_check()
        with (
            _unavailable_as_storage_error(self),
            Session(self.write_engine, expire_on_commit=False) as session,
            session.begin(),
        ):
            yield session

    @contextmanager
    def write_connection(self, *, durable: bool = True) -> Iterator[Connection]:
        """Like :meth:`write`, as a Core connection (the repository's hot paths: less overhead).

        ``durable=False`` is for writes that can be made again (a model cache entry): the commit
        does not wait for the disk (SQLite ``synchronous=NORMAL`` for this transaction,
        PostgreSQL ``synchronous_commit = off``). Such a write survives the process dying (it
        is in the database file or the server), may be lost with a power cut or an operating
        system crash, and never corrupts anything; it costs a fraction of a durable commit (an
        fsync, ~1.7 ms here).
        """
        self._after_fork_check()
        with _unavailable_as_storage_error(self):
            if durable:
                with self.write_engine.begin() as conn:
                    yield conn
                return
            with self.write_engine.connect() as conn:
                if self.is_sqlite:
                    # Set on the driver connection, outside any transaction (SQLite refuses a
                    # safety-level change inside one) and put back before the connection returns
                    # to the pool.
                    raw = conn.connection.driver_connection
                    assert raw is not None
                    raw.execute("PRAGMA synchronous = NORMAL")
                    try:
                        with conn.begin():
                            yield conn
                    finally:
                        raw.execute("PRAGMA synchronous = FULL")
                else:
                    with conn.begin():
                        conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
                        yield conn

    @contextmanager
    def read_connection(self) -> Iterator[Connection]:
        """Like :meth:`read`, as a Core connection."""
        self._after_fork_check()
        with _unavailable_as_storage_error(self), self.read_engine.begin() as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read-only transaction on the read engine: one consistent snapshot, never blocked."""
        self._after_fork_check()
        with (
            _unavailable_as_storage_error(self),
            Session(self.read_engine, expire_on_commit=False) as session,
            session.begin(),
        ):
            yield session

    def pragmas(self, *, engine: str = "write") -> dict[str, Any]:
        """The SQLite pragmas of one fresh pooled connection of ``engine`` ("write" or "read")."""
        if not self.is_sqlite:
            return {}
        chosen = self.write_engine if engine == "write" else self.read_engine
        with chosen.connect() as conn:
            return {
                name: conn.exec_driver_sql(f"PRAGMA {name}").scalar() for name in SQLITE_PRAGMAS
            } | {"query_only": conn.exec_driver_sql("PRAGMA query_only").scalar()}

    def dispose(self) -> None:
        """Close every pooled connection of both engines. The object must not be used afterwards."""
        self.write_engine.dispose()
        self.read_engine.dispose()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

    def __repr__(self) -> str:
        return f"Database({display_url(self.url)!r})"

    def _after_fork_check(self) -> None:
        # Pooled connections must never cross a fork: both processes would share one file handle
        # and SQLite's locks. Drop the inherited ones without closing them (the parent owns them).
        if os.getpid() != self._pid:
            self.write_engine.dispose(close=False)
            self.read_engine.dispose(close=False)
            self._pid = os.getpid()


@contextmanager
def _unavailable_as_storage_error(db: Database) -> Iterator[None]:
    """Translate the driver's "cannot use the database now" errors (locked past the busy timeout,
    a dropped or refused connection) into :class:`DatabaseUnavailable`; the transaction has rolled
    back. Programming errors (bad SQL, constraint violations) pass through unchanged."""
    try:
        yield
    except sa_exc.DBAPIError as exc:
        if _is_unavailable(exc):
            raise DatabaseUnavailable(
                f"the database {display_url(db.url)} cannot be used right now: {exc.orig}"
            ) from exc
        raise


#: SQLite's primary result codes that mean "not now" rather than "never": busy, locked, an I/O
#: error, cannot open, lock protocol.
_SQLITE_TRANSIENT = frozenset({5, 6, 10, 14, 15})


def _is_unavailable(exc: sa_exc.DBAPIError) -> bool:
    """Whether a driver error means the database cannot be used right now (by its type and code,
    never its message)."""
    if exc.connection_invalidated:
        return True
    code = getattr(exc.orig, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _SQLITE_TRANSIENT
    return isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError)


def _prepare_sqlite_file(database: str | None) -> None:
    if not database or database == ":memory:" or database.startswith("file::memory:"):
        raise StorageValueError(
            "in-memory SQLite is not supported: the read and write engines would each see their "
            "own empty database. Use a file, e.g. sqlite:///{tmp_path}/rooms.db"
        )
    Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)


def _check_server(url: str, engine: Engine) -> None:
    """Connect once; translate "cannot connect" into :class:`CannotOpenDatabase` with the fix.

    The driver's message is the only place that says *why* a connection failed (psycopg gives no
    SQLSTATE for a failed connection), so the cause is told apart by what works instead: when the
    same server's ``postgres`` maintenance database accepts the login, the named database is
    missing; otherwise the server is down, unreachable or refuses the login.
    """
    shown = display_url(url)
    try:
        with engine.connect():
            return
    except DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
    parsed = make_url(url)
    name = parsed.database or ""
    if name and name != "postgres" and _server_accepts(parsed.set(database="postgres")):
        raise CannotOpenDatabase(
            f"database {name!r} does not exist on the server of {shown}; create it first "
            f"(createdb -h {parsed.host or 'localhost'} -p {parsed.port or 5432} "
            f"-U {parsed.username or 'postgres'} {name}) or fix the name in ROOMS_DATABASE_URL",
            url=shown,
        ) from None
    raise CannotOpenDatabase(
        f"cannot connect to {shown}: {reason}. Check that PostgreSQL is running and listening "
        "on that host and port (pg_isready -h HOST -p PORT), and that the user and password in "
        "ROOMS_DATABASE_URL (or --db) are right",
        url=shown,
    ) from None


def _server_accepts(url: Any) -> bool:
    probe = create_engine(url, poolclass=NullPool, connect_args={"connect_timeout": 5})
    try:
        with probe.connect():
            return True
    except DBAPIError:
        return False
    finally:
        probe.dispose()


def _create_engine(url: str, *, write: bool, busy_ms: int, echo: bool) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        options: dict[str, Any] = {}
        connect_args: dict[str, Any] = {}
        postgres = parsed.get_backend_name() == "postgresql"
        if not write and postgres:
            options["postgresql_readonly"] = True
        if postgres and "connect_timeout" not in parsed.query:
            # libpq waits forever for a host that drops packets; fail in seconds instead.
            connect_args["connect_timeout"] = CONNECT_TIMEOUT_SECONDS
        try:
            return create_engine(
                url,
                echo=echo,
                pool_pre_ping=True,
                execution_options=options,
                connect_args=connect_args,
            )
        except ModuleNotFoundError as exc:
            raise CannotOpenDatabase(
                f"the driver module {exc.name!r} for {display_url(url)} is not installed; write "
                "the URL as postgresql://... to use psycopg 3 and install it with "
                "python -m pip install -r requirements.txt (or 'psycopg[binary]')",
                url=display_url(url),
            ) from None

    # pysqlite's own timeout is the same busy handler; keep both in step.
    engine = create_engine(url, echo=echo, connect_args={"timeout": busy_ms / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Stop pysqlite from issuing BEGIN itself: the "begin" listener below decides the kind.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            # busy_timeout first, so even the journal-mode switch waits for a concurrent opener.
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = FULL")
            cursor.execute("PRAGMA foreign_keys = ON")
            if not write:
                cursor.execute("PRAGMA query_only = ON")
        finally:
            cursor.close()

    begin_sql = "BEGIN IMMEDIATE" if write else "BEGIN"

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql(begin_sql)

    return engine


__all__ = ["DEFAULT_BUSY_TIMEOUT_MS", "Database"]
