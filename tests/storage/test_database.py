"""Connection set-up: pragmas on every connection, IMMEDIATE writes, unblocked reads, config."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

import storage
from storage import Database, StorageValueError
from storage.database import config


@pytest.fixture
def db(db_url: str):
    with Database(db_url) as database:
        yield database


EXPECTED = {"journal_mode": "wal", "busy_timeout": 10_000, "foreign_keys": 1, "synchronous": 2}


@pytest.mark.sqlite_only(reason="PRAGMAs are SQLite's connection settings")
@pytest.mark.parametrize("engine", ["write", "read"])
def test_pragmas_are_set_on_every_connection(db: Database, engine: str) -> None:
    chosen = db.write_engine if engine == "write" else db.read_engine
    # Hold several pooled DBAPI connections at once so the pool must open new ones (raw ones:
    # a SQLAlchemy connection on the write engine would BEGIN IMMEDIATE and queue behind the
    # others). Each one must carry the pragmas.
    conns = [chosen.raw_connection() for _ in range(4)]
    try:
        for conn in conns:
            cursor = conn.cursor()
            for name, value in EXPECTED.items():
                assert cursor.execute(f"PRAGMA {name}").fetchone()[0] == value, name
            query_only = cursor.execute("PRAGMA query_only").fetchone()[0]
            assert query_only == (1 if engine == "read" else 0)
            cursor.close()
    finally:
        for conn in conns:
            conn.close()


@pytest.mark.sqlite_only(
    reason="PRAGMAs are SQLite's; on PostgreSQL pragmas() is {} (test_postgres)"
)
def test_pragmas_helper_reports_both_engines(db: Database) -> None:
    assert db.pragmas(engine="write") == EXPECTED | {"query_only": 0}
    assert db.pragmas(engine="read") == EXPECTED | {"query_only": 1}


def test_a_write_that_need_not_be_durable_commits_without_waiting_for_the_disk(
    db: Database,
) -> None:
    """``durable=False`` relaxes only its own transaction: the write is committed and visible,
    and the next (durable) transaction on the same pooled connection waits for the disk again."""
    room_id = storage.create_room(db, "before", {})
    with db.write_connection(durable=False) as conn:
        if db.is_sqlite:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
        else:
            assert conn.exec_driver_sql("SHOW synchronous_commit").scalar() == "off"
        conn.execute(text("UPDATE rooms SET name = 'after' WHERE id = :id"), {"id": room_id})
    assert storage.get_room(db, room_id).name == "after"
    with db.write_connection() as conn:
        if db.is_sqlite:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL again
        else:
            assert conn.exec_driver_sql("SHOW synchronous_commit").scalar() == "on"


def test_a_failed_write_that_need_not_be_durable_leaves_nothing(db: Database) -> None:
    room_id = storage.create_room(db, "kept", {})
    with pytest.raises(RuntimeError), db.write_connection(durable=False) as conn:
        conn.execute(text("UPDATE rooms SET name = 'lost' WHERE id = :id"), {"id": room_id})
        raise RuntimeError("the caller failed halfway")
    assert storage.get_room(db, room_id).name == "kept"
    if db.is_sqlite:
        assert db.pragmas()["synchronous"] == 2


def test_read_engine_refuses_writes(db: Database) -> None:
    room_id = storage.create_room(db, "r")
    refused = pytest.raises(Exception, match="readonly|read-only|query_only|attempt to write")
    with refused, db.read() as session:
        session.connection().execute(
            text("UPDATE rooms SET name = 'x' WHERE id = :id"), {"id": room_id}
        )
    assert storage.get_room(db, room_id).name == "r"


@pytest.mark.sqlite_only(reason="BEGIN IMMEDIATE is SQLite's write lock; PostgreSQL locks rows")
def test_write_sessions_begin_immediate(db: Database) -> None:
    statements: list[str] = []

    def record(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        statements.append(statement)

    from sqlalchemy import event

    event.listen(db.write_engine, "before_cursor_execute", record)
    try:
        storage.create_room(db, "r")
    finally:
        event.remove(db.write_engine, "before_cursor_execute", record)
    assert statements[0] == "BEGIN IMMEDIATE"


@pytest.mark.sqlite_only(reason="SQLite's deferred-transaction lock upgrade, through sqlite3")
def test_deferred_read_then_write_fails_but_immediate_waits(db_url: str, tmp_path: Path) -> None:
    """Negative control: the failure mode BEGIN IMMEDIATE exists to prevent is real here."""
    db = Database(db_url)
    room_id = storage.create_room(db, "r")
    path = db_url.removeprefix("sqlite:///")
    a = sqlite3.connect(path, isolation_level=None, timeout=10)
    b = sqlite3.connect(path, isolation_level=None, timeout=10)
    a.execute("BEGIN")  # deferred, like pysqlite's default
    a.execute("SELECT count(*) FROM events").fetchall()  # read snapshot taken
    b.execute("BEGIN IMMEDIATE")
    b.execute("UPDATE rooms SET name = 'b' WHERE id = ?", (room_id,))
    b.execute("COMMIT")
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        # Upgrading a stale read snapshot to a write fails at once, whatever busy_timeout says.
        a.execute("UPDATE rooms SET name = 'a' WHERE id = ?", (room_id,))
    a.execute("ROLLBACK")
    # The same interleaving through the write engine cannot fail: the lock is taken up front.
    b.execute("BEGIN IMMEDIATE")
    done = threading.Event()

    def writer() -> None:
        storage.append_message(db, room_id, "human", "u", "waited for the lock")
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.3)
    assert not done.is_set()  # waiting on the busy handler, not failing
    b.execute("COMMIT")
    thread.join(10)
    assert done.is_set()
    assert storage.latest_seq(db, room_id) == 1
    a.close()
    b.close()
    db.dispose()


@pytest.mark.timeout(60)
def test_reads_are_not_blocked_by_an_open_write_transaction(db: Database) -> None:
    """The write stays open (in this very thread) until every read is done, so a read that
    waited for it could never succeed: it would fail when the busy timeout ends, or hang."""
    room_id = storage.create_room(db, "r")
    storage.append_message(db, room_id, "human", "u", "first")
    with db.write() as session:
        session.connection().execute(
            text("UPDATE rooms SET name = 'locked' WHERE id = :id"), {"id": room_id}
        )
        assert storage.latest_seq(db, room_id) == 1
        assert [e.content for e in storage.events(db, room_id)] == ["first"]
        assert storage.get_room(db, room_id).name == "r"  # the snapshot before the write


def test_in_memory_sqlite_is_refused() -> None:
    with pytest.raises(StorageValueError, match="in-memory"):
        Database("sqlite://")
    with pytest.raises(StorageValueError, match="in-memory"):
        Database("sqlite:///:memory:")


def test_short_busy_timeout_is_refused(db_url: str) -> None:
    with pytest.raises(StorageValueError, match="busy_timeout_ms"):
        Database(db_url, busy_timeout_ms=1000)


def test_default_url_uses_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOMS_DATA_DIR", str(tmp_path / "data" / "nested"))
    monkeypatch.delenv("ROOMS_DATABASE_URL", raising=False)
    assert config.database_url() == f"sqlite:///{tmp_path / 'data' / 'nested' / 'rooms.db'}"
    assert (tmp_path / "data" / "nested").is_dir()
    with Database() as db:
        assert Path(db.url.removeprefix("sqlite:///")).exists()


def test_database_url_env_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    monkeypatch.setenv("ROOMS_DATABASE_URL", url)
    assert config.database_url() == url
    with Database() as db:
        assert db.url == url


def test_data_dir_default_is_platformdirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ROOMS_DATA_DIR", raising=False)
    monkeypatch.setattr(config.platformdirs, "user_data_dir", lambda app: str(tmp_path / app))
    assert config.data_dir() == tmp_path / "conversation-rooms"


def test_urls_are_shown_without_passwords() -> None:
    shown = config.display_url("postgresql+psycopg://rooms:hunter2@db.example/rooms")
    assert "hunter2" not in shown
    url = "postgresql+psycopg://rooms:hunter2@127.0.0.1:1/rooms"
    database = Database.__new__(Database)
    database.url = url
    assert "hunter2" not in repr(database)


def test_timestamps_are_aware_utc(db: Database) -> None:
    room = storage.get_room(db, storage.create_room(db, "r"))
    assert room.created_at.utcoffset() is not None
    assert room.created_at.utcoffset().total_seconds() == 0


def test_sqlite_file_folder_is_created(tmp_path: Path) -> None:
    with Database(f"sqlite:///{tmp_path / 'a' / 'b' / 'rooms.db'}") as db:
        assert db.is_sqlite
    assert (tmp_path / "a" / "b" / "rooms.db").exists()


@pytest.mark.timeout(60)
@pytest.mark.sqlite_only(reason="a BEGIN IMMEDIATE holder of the SQLite file, through sqlite3")
def test_opening_a_current_database_does_not_wait_for_writers(db_url: str) -> None:
    Database(db_url).dispose()
    holder = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a long writer elsewhere, holding on until the end
    try:
        # An opening that waited for the writer could never get through: it would fail with
        # "database is locked" when the busy timeout ends, or hang (the timeout mark).
        with Database(db_url) as db:
            assert storage.list_rooms(db) == []
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _child_appends(db: Database, room_id: int) -> None:  # runs in a forked child
    storage.append_message(db, room_id, "human", "child", "from the forked child")
    os._exit(0)


def test_a_forked_child_does_not_reuse_the_parents_connections(db: Database) -> None:
    room_id = storage.create_room(db, "r")
    storage.append_message(db, room_id, "human", "parent", "before fork")  # pool is warm
    child = multiprocessing.get_context("fork").Process(target=_child_appends, args=(db, room_id))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    storage.append_message(db, room_id, "human", "parent", "after fork")
    assert [e.speaker for e in storage.events(db, room_id)] == ["parent", "child", "parent"]
