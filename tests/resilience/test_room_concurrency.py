"""Several drivers on one room: a paused lease holder (SIGSTOP) whose late commit is refused, four
worker processes and a posting person on one room, and stale lease holders that must neither
spend money on another worker's turn nor write."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import storage
from conversation.models import OfflineModel
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.engine import Engine
from conversation.rooms.room import Room
from conversation.termination.conditions import TextMention
from storage import Database
from tests.support.clocks import OffsetClock as Clock
from tests.support.room_common import (
    ROOT,
    FixedModels,
    child_env,
    drive_with,
    integrity,
    log_problems,
    replay_problems,
    scripted_model,
)
from tests.support.waiting import wait_until

AGENTS = [{"name": "Alice"}, {"name": "Bob"}, {"name": "Cara"}]
SUPPORT = ROOT / "tests" / "support"


@pytest.fixture
def db(db_url: str) -> Any:
    database = Database(db_url)
    yield database
    database.dispose()


def lease_expired(db: Database, room_id: int) -> bool:
    lease = storage.get_lease(db, room_id)
    return lease is not None and lease.expires_at is not None and lease.expires_at <= db.now()


def snapshot(db: Database, room_id: int) -> list[tuple[Any, ...]]:
    return [
        (e.id, e.seq, e.kind, e.speaker, e.content, e.state, e.updated_at)
        for e in storage.events(db, room_id)
    ]


# -- a paused lease holder ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["taken_over", "expired_only", "not_paused"])
def test_a_lease_holder_paused_past_its_lease_cannot_commit(
    tmp_path: Path, db_url: str, scenario: str
) -> None:
    db = Database(db_url)
    room = Room.create(
        db,
        name="zombie",
        agents=AGENTS,
        planner=RoundRobinRoomPlanner(max_rounds=1),
        # The zombie's answer would be reused from the model cache by whoever resumes the turn
        # (by design: tests/resilience/test_model_cache.py); here which writer wins is checked.
        use_cache=False,
    )
    room.post("go", request_id="h-1")
    marker = tmp_path / "calling"
    zombie = subprocess.Popen(
        [sys.executable, str(SUPPORT / "room_zombie.py"), "--db", db_url]
        # A call twice as long as the lease: only renewals keep it (every ttl / 3, so a loaded
        # machine may delay one by over a second without losing the lease).
        + ["--room", str(room.id), "--marker", str(marker), "--lease-ttl", "3.0", "--hold", "6.0"],
        env=child_env(tmp_path / "zombie-home", db_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(marker.exists, 60, "the zombie's model call")
        if scenario != "not_paused":
            os.kill(zombie.pid, signal.SIGSTOP)
            wait_until(lambda: lease_expired(db, room.id), 10, "the zombie's lease to expire")
            if scenario == "taken_over":
                rescuer = drive_with(
                    Room.open(db, room.id), OfflineModel(replies=["rescue A", "rescue B", "C"])
                )
                taken = rescuer.run()
                assert [(t.seq, t.speaker, t.result) for t in taken][0] == (2, "Alice", "rescue A")
                assert rescuer.status == "settled"
            before = snapshot(db, room.id)
            os.kill(zombie.pid, signal.SIGCONT)
        out, err = zombie.communicate(timeout=60)
    finally:
        if zombie.poll() is None:
            os.kill(zombie.pid, signal.SIGCONT)
            zombie.kill()
            zombie.wait()
    assert zombie.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    rows = storage.events(db, room.id)
    if scenario == "not_paused":  # control: the same child commits when nobody pauses it
        assert (result["kind"], result["content"]) == ("claim", "ZOMBIE REPLY")
        assert rows[1].content == "ZOMBIE REPLY" and rows[1].state == "done"
    else:
        assert (result["kind"], result["reason"]) == ("wait", "commit refused by the fence")
        assert snapshot(db, room.id) == before  # the late commit changed nothing
        assert all("ZOMBIE" not in e.content for e in rows)
        if scenario == "expired_only":
            # Nobody took over, yet the expired lease still fenced it; the turn is still open.
            assert (rows[1].state, rows[1].content) == ("running", "")
            later = drive_with(Room.open(db, room.id), OfflineModel(replies=["late A", "B", "C"]))
            assert later.run()[0].result == "late A"
        final = storage.events(db, room.id)
        assert log_problems(final) == []
        assert [e.seq for e in final] == list(range(1, len(final) + 1))
        assert [e.speaker for e in final] == ["user", "Alice", "Bob", "Cara"]
    db.dispose()
    assert integrity(db_url) == "ok"


# -- four worker processes and a person ------------------------------------------------------------------


@pytest.mark.slow
def test_four_worker_processes_and_a_posting_person_share_one_room(
    tmp_path: Path, db_url: str
) -> None:
    db = Database(db_url)
    room = Room.create(
        db,
        name="busy",
        agents=AGENTS,
        planner=RoundRobinRoomPlanner(max_rounds=2, max_messages=8),
        model=OfflineModel(latency=0.02, mention_probability=0.6, seed=3),
    )
    messages = 10
    processes = []
    for n in range(4):
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "conversation.worker", "--db", db_url]
                + ["--concurrency", "2", "--poll", "0.05", "--lease-ttl", "10"],
                cwd=ROOT,
                env=child_env(tmp_path / f"worker-{n}", db_url),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    poster = subprocess.Popen(
        [sys.executable, str(SUPPORT / "room_poster.py"), "--db", db_url]
        + ["--room", str(room.id), "--count", str(messages), "--pause", "0.15"],
        env=child_env(tmp_path / "poster", db_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, poster_err = poster.communicate(timeout=120)
        assert poster.returncode == 0, poster_err
        assert out.strip() == f"posted {messages}"

        def finished() -> bool:
            current = Room.open(db, room.id)
            return current.status == "settled" and current.pending() is None

        wait_until(finished, 120, "the workers to settle the room")
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        outputs = [process.communicate(timeout=60) for process in processes]
    errors = [poster_err] + [err for _, err in outputs]
    assert [p.returncode for p in processes] == [0, 0, 0, 0], errors
    for err in errors:
        assert "database is locked" not in err
        assert "Traceback" not in err, err

    rows = storage.events(db, room.id)
    assert log_problems(rows) == []
    humans = [e for e in rows if e.kind == "human"]
    assert [e.content for e in humans] == [f"human message {i}" for i in range(messages)]
    assert [e.request_id for e in humans] == [f"h-{i}" for i in range(messages)]
    turns = [e for e in rows if e.kind in ("agent", "pass")]
    assert turns and all(e.state == "done" for e in turns)
    assert replay_problems(Room.open(db, room.id), rows) == []
    after_last = [e for e in rows if e.seq > humans[-1].seq]
    assert [e.speaker for e in after_last][:3] == ["Alice", "Bob", "Cara"]  # the last activity ran
    db.dispose()
    assert integrity(db_url) == "ok"


def test_room_objects_in_threads_never_take_the_same_turn(db: Database) -> None:
    room = Room.create(
        db, name="threads", agents=AGENTS, planner=RoundRobinRoomPlanner(max_rounds=2)
    )
    models = [scripted_model(latency=0.003) for _ in range(4)]
    drivers = [drive_with(Room.open(db, room.id), model) for model in models]
    stop = threading.Event()
    failures: list[BaseException] = []

    def drive(each: Room) -> None:
        try:
            while not stop.is_set():
                each.run()
                time.sleep(0.001)
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=drive, args=(each,)) for each in drivers]
    for thread in threads:
        thread.start()
    try:
        for i in range(8):
            room.post(f"message {i}", request_id=f"m-{i}")
            room.post(f"message {i}", request_id=f"m-{i}")
            time.sleep(0.03)
        wait_until(
            lambda: room.status == "settled" and room.pending() is None, 60, "a settled room"
        )
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    assert failures == []
    rows = room.events()
    assert log_problems(rows) == [] and replay_problems(room, rows) == []
    assert len([e for e in rows if e.kind == "human"]) == 8
    turns = [e for e in rows if e.kind in ("agent", "pass")]
    assert sum(model.calls for model in models) == len(turns)  # no turn was asked twice


# -- stale lease holders (in process, with a clock we move) ------------------------------------------------


def stale_and_current(db: Database, room_id: int, clock: Clock) -> tuple[int, int]:
    """A lease that expired (the zombie's token) and the one another worker holds now."""
    stale = storage.acquire_lease(db, room_id, "zombie", 5)
    clock.offset += timedelta(seconds=10)
    current = storage.acquire_lease(db, room_id, "worker-b", 60)
    assert stale is not None and current is not None and current > stale
    return stale, current


def test_a_stale_lease_holder_does_not_call_the_model_for_another_workers_turn(
    db_url: str,
) -> None:
    clock = Clock()
    db = Database(db_url, clock=clock)
    try:
        room = Room.create(db, name="stale", agents=AGENTS)
        room.post("go")
        stale, current = stale_and_current(db, room.id, clock)
        claimed = storage.claim_turn(  # worker B claims Alice's turn and is calling its model
            db,
            room.id,
            token=current,
            expected_last_seq=1,
            speaker="Alice",
            request_id="turn-2",
            activity=1,
            round=0,
        )
        assert claimed is not None
        model = OfflineModel(replies=["zombie words"])
        zombie = Engine(db, "zombie", models=FixedModels(model))
        outcome = asyncio.run(zombie.step_room(room.id, stale))
        assert storage.get_event(db, claimed.id).state == "running"  # the fence held...
        assert model.calls == 0, f"the zombie called the model ({outcome!r})"  # ...but it paid
    finally:
        db.dispose()


def test_a_stale_lease_holder_writes_no_termination_notice(db_url: str) -> None:
    clock = Clock()
    db = Database(db_url, clock=clock)
    try:
        room = Room.create(db, name="stale", agents=AGENTS, termination=TextMention("DEAL"))
        room.post("go")
        storage.append_message(db, room.id, "agent", "Alice", "DEAL at 10")
        stale, _ = stale_and_current(db, room.id, clock)
        before = snapshot(db, room.id)
        zombie = Engine(db, "zombie", models=FixedModels(OfflineModel(replies=["x"])))
        asyncio.run(zombie.step_room(room.id, stale))
        assert room.status == "running"  # the fenced status update was refused...
        assert snapshot(db, room.id) == before  # ...and so must be the notice
    finally:
        db.dispose()


def test_a_current_lease_holder_does_terminate_the_room(db_url: str) -> None:
    """Control for the test above: with a current token the same call writes notice and status."""
    db = Database(db_url)
    try:
        room = Room.create(db, name="ok", agents=AGENTS, termination=TextMention("DEAL"))
        room.post("go")
        storage.append_message(db, room.id, "agent", "Alice", "DEAL at 10")
        token = storage.acquire_lease(db, room.id, "worker", 60)
        assert token is not None
        driver = Engine(db, "worker", models=FixedModels(OfflineModel(replies=["x"])))
        asyncio.run(driver.step_room(room.id, token))
        assert (room.status, room.stop_reason) == ("terminated", "'DEAL' mentioned by Alice")
        assert room.events()[-1].content == "Stopped: 'DEAL' mentioned by Alice"
    finally:
        db.dispose()
