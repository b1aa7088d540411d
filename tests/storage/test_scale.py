"""Scale (issue 23): the worker's scan uses an index on both backends, and whole experiments are
stopped and created in batches (a fixed number of statements per batch, never one per room)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
import sqlalchemy as sa

import storage
from storage import Database
from storage.tables import Room

ROOMS = Room.__table__  # type: ignore[attr-defined]


@contextmanager
def counted(db: Database) -> Iterator[list[str]]:
    """Every statement sent on the write engine inside the block."""
    seen: list[str] = []

    def listen(conn, cursor, statement, params, context, executemany) -> None:  # noqa: ANN001
        seen.append(statement)

    sa.event.listen(db.write_engine, "before_cursor_execute", listen)
    try:
        yield seen
    finally:
        sa.event.remove(db.write_engine, "before_cursor_execute", listen)


def bulk_rooms(db: Database, count: int, status: str, experiment_id: int | None = None) -> None:
    now = db.now()
    rows = [
        {
            "name": f"r{i}",
            "status": status,
            "config": {},
            "experiment_id": experiment_id,
            "created_at": now,
            "updated_at": now - timedelta(seconds=i),
            "edits": 0,
        }
        for i in range(count)
    ]
    with db.write_connection() as conn:
        conn.execute(sa.insert(ROOMS), rows)


def scan_plan(db: Database) -> str:
    statements: list[tuple[str, object]] = []

    def listen(conn, cursor, statement, params, context, executemany) -> None:  # noqa: ANN001
        statements.append((statement, params))

    sa.event.listen(db.read_engine, "before_cursor_execute", listen)
    try:
        storage.list_runnable_rooms(db)
    finally:
        sa.event.remove(db.read_engine, "before_cursor_execute", listen)
    statement, params = statements[-1]
    with db.write_connection() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("ANALYZE")
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
            return "\n".join(str(row[-1]) for row in rows)
        conn.exec_driver_sql("ANALYZE rooms")
        conn.exec_driver_sql("ANALYZE leases")
        rows = conn.exec_driver_sql("EXPLAIN " + statement, params).all()
        return "\n".join(str(row[0]) for row in rows)


def test_the_runnable_scan_reads_running_rooms_through_an_index(db: Database) -> None:
    bulk_rooms(db, 3000, "terminated")
    bulk_rooms(db, 20, "running")
    assert len(storage.list_runnable_rooms(db)) == 20
    plan = scan_plan(db)
    if db.write_engine.dialect.name == "sqlite":
        assert "SEARCH rooms USING" in plan and "INDEX ix_rooms_" in plan, plan
        assert "SCAN rooms" not in plan, plan
    else:
        assert "Seq Scan on rooms" not in plan, plan
        assert "ix_rooms_runnable" in plan or "ix_rooms_status_updated" in plan, plan


def experiment_with_rooms(db: Database, count: int, opened: bool = True) -> tuple[int, list[int]]:
    rooms = [
        storage.ExperimentRoom(
            name=f"e | c | #{i}",
            config={"seed": i},
            condition="c",
            replicate=i,
            opening="Hello.",
            speaker="user",
            request_id=f"experiment-c1-r{i}-opening",
        )
        for i in range(1, count + 1)
    ]
    experiment_id = storage.create_experiment(db, "e", {}, status="running", rooms=rooms)
    return experiment_id, storage.experiment_room_ids(db, experiment_id)


def test_stopping_many_rooms_takes_a_few_statements_per_batch(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("storage.rooms.room.BATCH_ROOMS", 10)
    experiment_id, ids = experiment_with_rooms(db, 25)
    storage.update_room(db, ids[0], status="terminated")  # finished: left alone
    done: list[tuple[int, int]] = []
    with counted(db) as statements:
        stopped = storage.stop_rooms(
            db,
            ids,
            reason="the experiment was stopped",
            allowed=["running", "idle", "paused"],
            notice="Stopped: the experiment was stopped",
            notice_data={"by": "ann"},
            progress=lambda n, total: done.append((n, total)),
        )
    assert stopped == ids[1:]
    assert done == [(10, 25), (20, 25), (25, 25)]
    # begin + lock/probe + 2 updates + 1 insert (+ commit) per batch, whatever its size.
    assert len(statements) <= 3 * 7, statements
    counts = storage.experiment_status_counts(db, experiment_id)
    assert counts == {"stopped": 24, "terminated": 1}
    last = storage.events(db, ids[5])[-1]
    assert (last.seq, last.kind, last.content) == (
        2,
        "system",
        "Stopped: the experiment was stopped",
    )
    assert last.data == {"by": "ann"}
    assert storage.get_room(db, ids[5]).edits == 1


def test_a_design_is_created_in_batches_with_progress(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("storage.experiments.experiments.CREATE_BATCH", 7)
    rooms = [
        storage.ExperimentRoom(
            name=f"big | c | #{i}",
            config={"seed": i, "roster": [{"name": "Ann"}]},
            condition="c",
            replicate=i,
            opening="Hello.",
            speaker="user",
            request_id=f"experiment-c1-r{i}-opening",
        )
        for i in range(1, 21)
    ]
    seen: list[tuple[int, int]] = []
    with counted(db) as statements:
        experiment_id = storage.create_experiment(
            db, "big", {}, status="running", rooms=rooms, progress=lambda *p: seen.append(p)
        )
    assert seen == [(7, 20), (14, 20), (20, 20)]
    inserts = [s for s in statements if s.lstrip().upper().startswith("INSERT INTO ROOMS")]
    assert len(inserts) <= 3, "rooms are inserted a batch per statement, not one by one"
    ids = storage.experiment_room_ids(db, experiment_id)
    assert len(ids) == 20 and storage.experiment_status_counts(db, experiment_id) == {"running": 20}
    first = storage.events(db, ids[0])
    assert [(e.seq, e.kind, e.content) for e in first] == [(1, "human", "Hello.")]
    assert storage.get_room(db, ids[3]).config == {"seed": 4, "roster": [{"name": "Ann"}]}
    # Idempotent: the catch-up finds nothing missing.
    assert storage.add_experiment_rooms(db, experiment_id, rooms) == 0


def test_a_secret_in_any_room_refuses_the_whole_design(db: Database) -> None:
    shared = {"roster": [{"name": "Ann"}]}
    rooms = [
        storage.ExperimentRoom(
            name=f"s | c | #{i}",
            config={**shared, "seed": i} if i < 3 else {**shared, "api_key": "sk-" + "a" * 40},
            condition="c",
            replicate=i,
            opening="Hello.",
            speaker="user",
            request_id=f"experiment-c1-r{i}-opening",
        )
        for i in range(1, 4)
    ]
    with pytest.raises(storage.errors.ConfigContainsSecret):
        storage.create_experiment(db, "s", {}, status="running", rooms=rooms)
    assert storage.list_experiments(db) == [] and storage.count_rooms(db) == 0
