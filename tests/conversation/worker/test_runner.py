"""The runner: ``Worker`` (many rooms at once), ``BackgroundWorker`` (a thread), and the
``python -m conversation.worker`` command."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import storage
from conversation.models import OfflineModel
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from conversation.worker import BackgroundWorker, Worker
from storage import Database
from tests.support.room_common import (
    ROOT,
    FixedModels,
    child_env,
    log_problems,
    replay_problems,
    scripted_model,
)
from tests.support.waiting import wait_until

AGENTS = [{"name": "Alice"}, {"name": "Bob"}, {"name": "Cara"}]


def run_worker(worker: Worker, timeout: float = 60) -> int:
    return asyncio.run(asyncio.wait_for(worker.run(until_idle=True), timeout))


@pytest.mark.slow
def test_one_worker_drives_many_rooms_concurrently_to_their_end(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rooms_count, turns, latency = 30, 6, 0.07  # the offline model's wait, told apart by its length
    calls = {"now": 0, "most": 0}
    real_sleep = asyncio.sleep

    async def sleep(delay: float, result: object = None) -> object:
        """asyncio.sleep as before, counting the model calls waiting at the same time."""
        if delay != latency:
            return await real_sleep(delay, result)
        calls["now"] += 1
        calls["most"] = max(calls["most"], calls["now"])
        try:
            return await real_sleep(delay, result)
        finally:
            calls["now"] -= 1

    monkeypatch.setattr(asyncio, "sleep", sleep)
    rooms = []
    for i in range(rooms_count):
        room = Room.create(
            db,
            name=f"room {i}",
            agents=AGENTS,
            planner=RoundRobinPolicy(),
            termination=MaxTurns(turns),
            model=OfflineModel(latency=latency, seed=i),  # stored as a spec; the worker builds it
        )
        room.post(f"topic {i}", request_id=f"t-{i}")
        rooms.append(room)
    worker = Worker(db, concurrency=rooms_count, poll_interval=0.05)
    taken = run_worker(worker)
    assert taken == rooms_count * turns
    # Driven concurrently: every room's model call was waiting at once (one call at a time, or a
    # few, would be the same turns taken rooms_count times slower).
    assert calls["most"] == rooms_count
    for room in rooms:
        assert (room.status, room.stop_reason) == ("terminated", f"max_turns reached ({turns})")
        rows = room.events()
        assert [e.kind for e in rows] == ["human"] + ["agent"] * turns + ["system"]
        assert [e.speaker for e in rows[1:-1]] == ["Alice", "Bob", "Cara"] * 2
        assert log_problems(rows) == [] and replay_problems(room, rows) == []
        assert storage.get_lease(db, room.id).owner is None  # every lease released


def test_replies_are_committed_in_chunks_and_each_chunk_asks_again_at_once(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With more replies in hand than ``CHUNK``, the first chunks' next model calls are already
    under way while the later chunks are committed: the model's latency overlaps the worker's
    own work instead of being added to it."""
    from conversation.worker import runner

    monkeypatch.setattr(runner, "CHUNK", 4)
    rooms = 24  # six chunks of first replies
    order: list[tuple[str, int]] = []
    real_apply = storage.apply_turns

    def apply(*args: Any, **kwargs: Any) -> Any:
        order.append(("commit", len(kwargs.get("commits", ()))))
        return real_apply(*args, **kwargs)

    monkeypatch.setattr(storage, "apply_turns", apply)
    real_call = runner.Worker._call

    async def call(self: Any, pending: Any) -> Any:
        # The worker starts asking the model (its latency begins). Counted here, in the
        # worker's own task, not in the model's thread: under a full CI run the thread could
        # start after the next commit although the worker had asked before it.
        order.append(("call", 0))
        return await real_call(self, pending)

    monkeypatch.setattr(runner.Worker, "_call", call)
    for i in range(rooms):
        room = Room.create(
            db,
            name=f"chunked {i}",
            agents=AGENTS,
            planner=RoundRobinPolicy(),
            termination=MaxTurns(2),
            model=OfflineModel(latency=0.2, seed=i),
        )
        room.post(f"topic {i}", request_id=f"c-{i}")
    assert run_worker(Worker(db, concurrency=rooms, poll_interval=0.05)) == 2 * rooms
    commits = [i for i, (what, n) in enumerate(order) if what == "commit" and n]
    assert all(order[i][1] <= 4 for i in commits), order  # at most CHUNK replies per write
    last_first_round = commits[rooms // 4 - 1]
    second_round = [i for i, (what, _) in enumerate(order) if what == "call"][rooms:]
    assert second_round[0] < last_first_round, order


def test_a_worker_process_freezes_its_start_up_heap_after_its_first_turns(db: Database) -> None:
    import gc

    from conversation.worker.runner import WORKER_GC_THRESHOLDS

    room = Room.create(db, name="frozen", agents=AGENTS, planner=RoundRobinRoomPlanner(1))
    room.post("hello")
    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    assert thresholds != WORKER_GC_THRESHOLDS
    try:
        assert run_worker(Worker(db, freeze_start_up_heap=True, poll_interval=0.05)) == 3
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == WORKER_GC_THRESHOLDS  # the process's collector, tuned
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    room.post("again")
    run_worker(Worker(db, poll_interval=0.05))  # the default: a library caller's heap is theirs
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds


def test_worker_takes_only_runnable_rooms(db: Database) -> None:
    def make(name: str) -> Room:
        room = Room.create(db, name=name, agents=AGENTS, planner=RoundRobinRoomPlanner(1))
        return room

    idle = make("idle")
    paused = make("paused")
    paused.post("hi")
    paused.pause()
    held = make("held by another worker")
    held.post("hi")
    assert storage.acquire_lease(db, held.id, "someone-else", 60) is not None
    ready = make("ready")
    ready.post("hi")
    model = scripted_model()
    worker = Worker(db, concurrency=4, poll_interval=0.02)
    worker.engine.models = FixedModels(model)
    assert run_worker(worker) == 3
    assert ready.status == "settled" and len(ready.events()) == 4
    assert (idle.status, idle.events()) == ("idle", [])
    assert (paused.status, [e.kind for e in paused.events()]) == ("paused", ["human", "system"])
    assert (held.status, len(held.events())) == ("running", 1)
    assert model.calls == 3


def test_a_worker_that_loses_its_listed_rooms_to_another_reads_the_list_again(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers started together list the same rooms; the one that loses every lease must
    take the others, not exit ``until_idle`` with runnable rooms left (seen in the benchmark:
    one of two workers quit at once and the other did all the work)."""
    rooms = []
    for i in range(4):
        room = Room.create(db, name=f"room {i}", agents=AGENTS, planner=RoundRobinRoomPlanner(1))
        room.post("hi")
        rooms.append(room)
    real = storage.list_runnable_rooms
    stale = real(db, limit=2)  # the snapshot both workers read

    def first_snapshot_then_real(*args: Any, **kwargs: Any) -> list[int]:
        monkeypatch.setattr(storage, "list_runnable_rooms", real)
        return stale

    # The other worker leases the two listed rooms between this worker's list and its leases.
    for room_id in stale:
        assert storage.acquire_lease(db, room_id, "the-other-worker", 60) is not None
    monkeypatch.setattr(storage, "list_runnable_rooms", first_snapshot_then_real)
    worker = Worker(db, concurrency=2, poll_interval=0.02)
    worker.engine.models = FixedModels(scripted_model())
    assert run_worker(worker) == 6  # a round (three turns) in each of the two rooms nobody held
    free = [room for room in rooms if room.id not in stale]
    assert [room.status for room in free] == ["settled", "settled"]


def test_worker_stops_at_a_draft_and_goes_on_after_approval(db: Database) -> None:
    room = Room.create(
        db, name="moderated", agents=AGENTS[:2], planner=RoundRobinRoomPlanner(1), moderated=True
    )
    room.post("hi")
    worker = Worker(db, poll_interval=0.02)
    worker.engine.models = FixedModels(OfflineModel(replies=["draft A", "draft B"]))
    run_worker(worker)
    draft = room.pending()
    assert draft is not None and (draft.state, room.status) == ("waiting", "waiting")
    draft.approve()
    run_worker(worker)
    second = room.pending()
    assert second is not None and (second.speaker, second.state) == ("Bob", "waiting")
    second.approve("edited B")
    run_worker(worker)
    assert [e.content for e in room.events()] == ["hi", "draft A", "edited B"]
    assert room.status == "settled"


def test_worker_leaves_a_failed_room_failed(db: Database) -> None:
    class BadRequest(Exception):
        status_code = 400

    room = Room.create(db, name="broken", agents=AGENTS, planner=RoundRobinRoomPlanner(1))
    room.post("hi")
    worker = Worker(db, poll_interval=0.02)
    worker.engine.models = FixedModels(OfflineModel(fail_on={1: BadRequest("nope")}))
    assert run_worker(worker) == 0
    assert room.status == "failed" and room.turns()[0].state == "failed"
    assert run_worker(worker) == 0  # a failed room is not runnable: nothing is retried


@pytest.mark.parametrize("concurrency", [0, -1, 1.5, True])
def test_worker_refuses_a_bad_concurrency(db: Database, concurrency: Any) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        Worker(db, concurrency=concurrency)


def test_background_worker_starts_drives_and_stops(db: Database) -> None:
    background = BackgroundWorker(db, concurrency=2, poll_interval=0.05)
    background.worker.engine.models = FixedModels(scripted_model())
    background.start()
    try:
        assert background.alive
        room = Room.create(db, name="live", agents=AGENTS, planner=RoundRobinRoomPlanner(1))
        room.post("hello")
        background.wake()
        wait_until(lambda: room.status == "settled", 20, "the background worker")
        assert [e.speaker for e in room.events()] == ["user", "Alice", "Bob", "Cara"]
    finally:
        background.stop(timeout=10)
    assert not background.alive
    later = Room.create(db, name="after stop", agents=AGENTS)
    later.post("anyone?")
    time.sleep(0.3)
    assert later.status == "running" and len(later.events()) == 1  # nobody drives it now


@pytest.mark.slow
def test_the_worker_command_drives_rooms_until_idle(tmp_path: Path, db_url: str) -> None:
    db = Database(db_url)
    room = Room.create(db, name="cli", agents=AGENTS, planner=RoundRobinRoomPlanner(1))
    room.post("hello")
    db.dispose()
    env = child_env(tmp_path / "cli-home", db_url)
    done = subprocess.run(
        [sys.executable, "-m", "conversation.worker", "--db", db_url, "--until-idle"]
        + ["--poll", "0.05"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    db = Database(db_url)
    try:
        again = Room.open(db, room.id)
        assert again.status == "settled"
        assert [e.speaker for e in again.events()] == ["user", "Alice", "Bob", "Cara"]
    finally:
        db.dispose()
    refused = subprocess.run(
        [sys.executable, "-m", "conversation.worker", "--db", db_url, "--concurrency", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2 and "--concurrency must be at least 1" in refused.stderr
