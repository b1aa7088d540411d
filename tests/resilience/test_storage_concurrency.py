"""Many writers on one SQLite file: threads and processes, retries, leases, a paused zombie.

Processes use the 'spawn' context and each opens its own Database (never share engines across
processes). Worker functions live at module level so spawned children can import them.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
from typing import Any

import pytest

import storage
from storage import Database

SPAWN = mp.get_context("spawn")


@pytest.fixture
def db(db_url: str):
    with Database(db_url) as database:
        yield database


def _append_worker(url: str, room_id: int, worker: int, count: int, shared: int, out: Any) -> None:
    try:
        db = Database(url)
        for i in range(count):
            for _retry in range(2):  # every message is sent twice, as a client retry would
                storage.append_message(
                    db,
                    room_id,
                    "human",
                    f"user{worker}",
                    f"message {i} from {worker}",
                    request_id=f"w{worker}-m{i}",
                )
            if i < shared:  # the same request ids from every process: one row each
                storage.append_message(
                    db, room_id, "human", "shared", f"shared {i}", request_id=f"shared-{i}"
                )
        db.dispose()
        out.put((worker, None))
    except BaseException:  # noqa: BLE001 - reported to the parent
        out.put((worker, traceback.format_exc()))


def _run(target: Any, args_per_process: list[tuple], timeout: float = 120) -> list[Any]:
    out = SPAWN.Queue()
    processes = [SPAWN.Process(target=target, args=(*args, out)) for args in args_per_process]
    for process in processes:
        process.start()
    results = [out.get(timeout=timeout) for _ in processes]
    for process in processes:
        process.join(timeout)
        assert process.exitcode == 0
    return results


@pytest.mark.slow
def test_four_processes_appending_with_retries_get_contiguous_seqs(db: Database) -> None:
    room_id = storage.create_room(db, "busy room")
    per_process, shared = 200, 20
    results = _run(_append_worker, [(db.url, room_id, w, per_process, shared) for w in range(4)])
    assert [error for _, error in results] == [None] * 4  # no "database is locked", no conflict
    log = storage.events(db, room_id)
    assert [e.seq for e in log] == list(range(1, 4 * per_process + shared + 1))
    request_ids = [e.request_id for e in log]
    assert len(set(request_ids)) == len(request_ids)
    for worker in range(4):
        mine = [e.content for e in log if e.speaker == f"user{worker}"]
        assert mine == [f"message {i} from {worker}" for i in range(per_process)]  # in order


def _turn_worker(url: str, room_id: int, worker: int, target: int, out: Any) -> None:
    try:
        db = Database(url)
        owner = f"worker-{worker}-{os.getpid()}"
        committed = 0
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            last = storage.latest_seq(db, room_id)
            if last >= target:
                break
            token = storage.acquire_lease(db, room_id, owner, 5)
            if token is None:
                time.sleep(0.001)
                continue
            last = storage.latest_seq(db, room_id)
            if last < target:
                turn = storage.claim_turn(
                    db,
                    room_id,
                    token=token,
                    expected_last_seq=last,
                    speaker=f"agent{last % 3}",
                    request_id=f"turn-{last + 1}",
                    activity=0,
                    round=last,
                )
                if turn is not None and storage.commit_turn(
                    db, turn.id, token, content=f"turn {turn.seq} by {owner}"
                ):
                    committed += 1
            storage.release_lease(db, room_id, owner, token)
        db.dispose()
        out.put((committed, None))
    except BaseException:  # noqa: BLE001 - reported to the parent
        out.put((0, traceback.format_exc()))


@pytest.mark.slow
def test_competing_workers_never_run_the_same_turn(db: Database) -> None:
    room_id = storage.create_room(db, "contended", status="running")
    target = 120
    results = _run(_turn_worker, [(db.url, room_id, w, target) for w in range(4)])
    assert [error for _, error in results] == [None] * 4
    assert sum(count for count, _ in results) == target  # every committed turn counted once
    log = storage.events(db, room_id)
    assert [e.seq for e in log] == list(range(1, target + 1))
    assert all(e.state == "done" and e.content.startswith(f"turn {e.seq} ") for e in log)
    assert [e.speaker for e in log] == [f"agent{(s - 1) % 3}" for s in range(1, target + 1)]


def test_threads_read_then_write_without_lock_errors(db: Database) -> None:
    room_id = storage.create_room(db, "threads")
    errors: list[str] = []
    stop = threading.Event()

    def writer(worker: int) -> None:
        try:
            for i in range(40):
                storage.append_message(
                    db, room_id, "human", f"t{worker}", f"{i}", request_id=f"t{worker}-{i}"
                )
        except BaseException:  # noqa: BLE001
            errors.append(traceback.format_exc())

    def reader() -> None:
        try:
            while not stop.is_set():
                last = storage.latest_seq(db, room_id)
                seqs = [e.seq for e in storage.events(db, room_id, after_seq=max(0, last - 5))]
                assert seqs == sorted(seqs)
        except BaseException:  # noqa: BLE001
            errors.append(traceback.format_exc())

    readers = [threading.Thread(target=reader) for _ in range(2)]
    writers = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join(60)
    stop.set()
    for thread in readers:
        thread.join(10)
    assert errors == []
    assert [e.seq for e in storage.events(db, room_id)] == list(range(1, 241))


def _zombie(url: str, room_id: int, claimed: Any, go: Any, out: Any) -> None:
    try:
        db = Database(url)
        token = storage.acquire_lease(db, room_id, "zombie", 1.0)
        turn = storage.claim_turn(
            db,
            room_id,
            token=token,
            expected_last_seq=1,
            speaker="Alice",
            request_id="turn-2",
            activity=1,
            round=0,
        )
        claimed.put(turn.id)
        go.wait(60)  # "calling the model"; the parent stops this process meanwhile
        out.put(storage.commit_turn(db, turn.id, token, content="zombie's late answer"))
    except BaseException:  # noqa: BLE001
        out.put(traceback.format_exc())


@pytest.mark.slow
def test_a_paused_lease_holder_cannot_commit_late(db: Database) -> None:
    room_id = storage.create_room(db, "zombie room", status="running")
    storage.append_message(db, room_id, "human", "user", "go")
    claimed, out, go = SPAWN.Queue(), SPAWN.Queue(), SPAWN.Event()
    child = SPAWN.Process(target=_zombie, args=(db.url, room_id, claimed, go, out))
    child.start()
    try:
        event_id = claimed.get(timeout=60)
        os.kill(child.pid, signal.SIGSTOP)  # paused past its 1 s lease
        time.sleep(1.3)
        token = storage.acquire_lease(db, room_id, "rescuer", 30)
        assert token == 2
        assert storage.open_turn(db, room_id).id == event_id  # resume the same turn
        assert storage.commit_turn(db, event_id, token, content="rescuer's answer")
    finally:
        os.kill(child.pid, signal.SIGCONT)
        go.set()
    assert out.get(timeout=60) is False
    child.join(30)
    stored = storage.get_event(db, event_id)
    assert (stored.content, stored.state) == ("rescuer's answer", "done")
    assert storage.latest_seq(db, room_id) == 2
