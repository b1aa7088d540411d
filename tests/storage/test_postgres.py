"""The same storage code on PostgreSQL (DESIGN section 6).

Skipped unless ``ROOMS_TEST_POSTGRES_URL`` names a reachable server where the user may create
databases, e.g. ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``. Each test gets a
fresh, uniquely named database that is dropped afterwards.
"""

from __future__ import annotations

import os
import threading
import traceback
import uuid

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

import storage
from storage import Database, RequestIdConflict, frames, migrate
from storage.tables import metadata

SERVER_URL = os.environ.get("ROOMS_TEST_POSTGRES_URL", "")


def _server() -> sa.Engine:
    if not SERVER_URL:
        pytest.skip("set ROOMS_TEST_POSTGRES_URL to run the PostgreSQL tests")
    engine = sa.create_engine(SERVER_URL, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect():
            pass
    except Exception as exc:  # noqa: BLE001 - any connection failure means "no server here"
        pytest.skip(f"PostgreSQL at ROOMS_TEST_POSTGRES_URL is not reachable: {exc}")
    return engine


@pytest.fixture
def pg_url():
    server = _server()
    name = f"rooms_test_{uuid.uuid4().hex[:12]}"
    with server.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    yield sa.make_url(SERVER_URL).set(database=name).render_as_string(hide_password=False)
    with server.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    server.dispose()


@pytest.fixture
def db(pg_url: str):
    with Database(pg_url) as database:
        yield database


def test_blank_postgres_database_matches_the_models(db: Database) -> None:
    assert not db.is_sqlite and db.pragmas() == {}
    with db.write_engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, metadata) == []
    assert migrate.database_revision(db) == migrate.head_revision()


def test_repository_round_trip_on_postgres(db: Database) -> None:
    room = storage.create_room(db, "pg", {"seed": 1}, status="running")
    first = storage.append_message(db, room, "human", "u", "hello", request_id="r1")
    assert storage.append_message(db, room, "human", "u", "hello", request_id="r1").id == first.id
    with pytest.raises(RequestIdConflict):
        storage.append_message(db, room, "human", "u", "changed", request_id="r1")
    token = storage.acquire_lease(db, room, "w1", 30)
    assert storage.acquire_lease(db, room, "w2", 30) is None
    turn = storage.claim_turn(
        db,
        room,
        token=token,
        expected_last_seq=1,
        speaker="A",
        request_id="t2",
        activity=1,
        round=0,
        saw=[1],
    )
    assert turn is not None and turn.seq == 2
    assert (
        storage.claim_turn(
            db,
            room,
            token=token,
            expected_last_seq=2,
            speaker="B",
            request_id="t3",
            activity=1,
            round=0,
        )
        is None
    )
    assert storage.commit_turns(
        db,
        [
            storage.TurnCommit(event_id=turn.id, token=token, content="hi"),
            storage.TurnCommit(event_id=turn.id, token=token + 1, content="stale"),
        ],
    ) == [True, False]
    fork = storage.fork_room(db, room, 2)
    copied = storage.events(db, fork)
    assert [e.content for e in copied] == ["hello", "hi"]
    assert frames.rooms_summary(db).set_index("room_id").loc[room, "messages"] == 2
    assert storage.release_lease(db, room, "w1", token)
    assert storage.acquire_lease(db, room, "w2", 30) == token + 1


def test_concurrent_appends_on_postgres(db: Database) -> None:
    room = storage.create_room(db, "pg threads")
    errors: list[str] = []

    def writer(worker: int) -> None:
        try:
            for i in range(25):
                for _ in range(2):
                    storage.append_message(
                        db, room, "human", f"u{worker}", f"{i}", request_id=f"{worker}-{i}"
                    )
        except BaseException:  # noqa: BLE001
            errors.append(traceback.format_exc())

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert [e.seq for e in storage.events(db, room)] == list(range(1, 101))
