"""PostgreSQL specifics (docs/design.md, "Scale beyond one machine"): the driver, URL forms, connection errors, the schema.

The rest of the storage, room, worker and resilience tests run on PostgreSQL too, through the
``backend`` parameter of ``tests/conftest.py``. The tests here that need a server use the one
``ROOMS_TEST_DATABASE`` names (``postgresql://postgres@127.0.0.1:5432/postgres``) and are skipped
without it, except in CI (``CI`` set) where a missing server is a failure. Each gets a fresh
database that is dropped afterwards.
"""

from __future__ import annotations

import os
import socket
import threading
import traceback
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

import storage
from storage import CannotOpenDatabase, Database, RequestIdConflict, normalize_url
from storage.database import migrate
from storage.research import frames
from storage.tables import metadata
from tests.support import databases


@pytest.fixture
def server() -> databases.PostgresServer:
    found = databases.server()
    if found is None:
        reason = f"set {databases.TEST_DATABASE_ENV} to run the PostgreSQL tests"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set, so they must run)", pytrace=False)
        pytest.skip(reason)
    return found


@pytest.fixture
def pg_url(server: databases.PostgresServer) -> Iterator[str]:
    url = server.create()
    yield url
    server.drop(url)


@pytest.fixture
def db(pg_url: str) -> Iterator[Database]:
    with Database(pg_url) as database:
        yield database


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u@h:5432/d", "postgresql+psycopg://u@h:5432/d"),
        ("postgres://u:pw@h/d", "postgresql+psycopg://u:pw@h/d"),
        ("postgresql+psycopg://u@h/d", "postgresql+psycopg://u@h/d"),
        ("postgresql+psycopg2://u@h/d", "postgresql+psycopg2://u@h/d"),
        ("sqlite:///x/rooms.db", "sqlite:///x/rooms.db"),
        ("  postgresql://u@h/d\n", "postgresql+psycopg://u@h/d"),
    ],
)
def test_postgres_urls_are_normalised_to_psycopg_3(given: str, expected: str) -> None:
    assert normalize_url(given) == expected


def test_a_url_that_is_not_one_is_refused_with_its_password_masked() -> None:
    with pytest.raises(storage.StorageValueError, match="is not a URL") as caught:
        normalize_url("postgresql://u:hunter2@h:port/d")
    assert "hunter2" not in str(caught.value)


def test_the_environment_setting_is_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOMS_DATABASE_URL", "postgresql://u@h/d")
    assert storage.database_url() == "postgresql+psycopg://u@h/d"


def test_an_unreachable_server_names_the_url_without_password_and_the_fix() -> None:
    url = f"postgresql://alice:hunter2@127.0.0.1:{_closed_port()}/rooms"
    with pytest.raises(CannotOpenDatabase) as caught:
        Database(url)
    message = str(caught.value)
    assert "hunter2" not in message and "alice:***@127.0.0.1" in message
    assert "cannot connect" in message and "pg_isready" in message
    assert caught.value.url == storage.display_url(normalize_url(url))
    assert isinstance(caught.value, ValueError)  # a configuration error


def test_a_missing_database_names_it_and_how_to_create_it(
    server: databases.PostgresServer,
) -> None:
    url = server.url_of("rooms_test_does_not_exist")
    with pytest.raises(CannotOpenDatabase, match="'rooms_test_does_not_exist' does not exist") as e:
        Database(url)
    assert "createdb -h 127.0.0.1" in str(e.value) and "rooms_test_does_not_exist" in str(e.value)


def test_a_missing_driver_says_how_to_install_one(server: databases.PostgresServer) -> None:
    url = sa.make_url(server.url).set(drivername="postgresql+pg8000").render_as_string(False)
    with pytest.raises(CannotOpenDatabase, match="not installed.*postgresql://"):
        Database(url)


def test_the_bare_postgresql_scheme_opens_a_database(pg_url: str) -> None:
    bare = sa.make_url(pg_url).set(drivername="postgresql").render_as_string(hide_password=False)
    assert bare.startswith("postgresql://")
    with Database(bare) as db:
        assert db.url == pg_url and db.write_engine.dialect.driver == "psycopg"
        assert storage.create_room(db, "bare url") == 1


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
