"""Restarts across processes: a worker stopped with SIGTERM hands its rooms over at once (its
leases released, not left to time out), and a headless worker alone finishes an experiment cut
short by a kill -9, creating the rooms that were never created (exactly the planned number, each
opening posted once)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import storage
from conversation import experiments as ex
from conversation.models import OfflineModel
from conversation.rooms.room import Room
from storage import Database
from tests.support.room_common import ROOT, child_env, log_problems, replay_problems
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow

TEMPLATE = {
    "agents": [
        {"name": "Buyer", "traits": {"role": "buyer"}},
        {"name": "Seller", "traits": {"role": "seller"}},
    ],
    "planner": {"kind": "round_robin", "transitions": None},
    "termination": {"kind": "max_turns", "max_turns": 6},
    "model": {"service": "offline", "model": "offline", "parameters": {"seed": 3, "latency": 0.2}},
    "moderated": False,
    "prompt_template": None,
    "context": None,
    "opening": "Negotiate the price of a mug.",
}


def worker(tmp_path: Path, db_url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "conversation.worker", "--db", db_url, "--poll", "0.05", *args],
        cwd=ROOT,
        env=child_env(tmp_path / "home", db_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def held_leases(db: Database, room_ids: list[int]) -> list[int]:
    return [
        room_id
        for room_id in room_ids
        if (lease := storage.get_lease(db, room_id)) is not None and lease.owner is not None
    ]


def test_a_worker_stopped_with_sigterm_releases_its_leases(tmp_path: Path, db_url: str) -> None:
    db = Database(db_url)
    rooms = [
        Room.create(
            db,
            name=f"slow {i}",
            agents=TEMPLATE["agents"],
            model=OfflineModel(latency=2.0),
            termination={"kind": "max_turns", "max_turns": 50},
            planner={"kind": "round_robin", "transitions": None},
        )
        for i in range(3)
    ]
    for room in rooms:
        room.post("talk slowly")
    ids = [r.id for r in rooms]
    child = worker(tmp_path, db_url, "--concurrency", "3", "--lease-ttl", "600")
    try:
        wait_until(lambda: len(held_leases(db, ids)) == 3, 60, "the worker to take every room")
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, child.stderr.read() if child.stderr else ""
    # A 600 s lease would stall another worker for ten minutes: it was released instead.
    assert held_leases(db, ids) == []
    assert all(storage.get_room(db, i).status == "running" for i in ids)
    db.dispose()


def test_a_headless_worker_finishes_an_experiment_cut_short_by_kill_9(
    tmp_path: Path, db_url: str
) -> None:
    db = Database(db_url)
    conditions = ex.crossed_conditions([("Buyer", "budget", ["$5", "$9", "$12"])])
    config = ex.design(TEMPLATE, conditions, 2)  # 6 rooms
    # What a crash of an older version left: the experiment running, only two rooms created.
    experiment_id = storage.create_experiment(db, "mugs", config, status="running")
    partial = ex.planned_experiment_rooms("mugs", config, speaker="user")[:2]
    assert storage.add_experiment_rooms(db, experiment_id, partial) == 2

    first = worker(tmp_path, db_url, "--concurrency", "6", "--lease-ttl", "2")
    try:
        wait_until(
            lambda: (
                sum(
                    len(storage.events(db, r.id))
                    for r in storage.list_rooms(db, experiment_id=experiment_id, limit=None)
                )
                >= 12
            ),
            90,
            "some turns of the experiment",
        )
    finally:
        os.kill(first.pid, signal.SIGKILL)  # no cleanup: leases left to expire
        first.wait(timeout=30)
    # --until-idle exits when nothing is runnable *now*: a room still leased by the dead worker
    # becomes runnable when its lease (2 s here) runs out, so start after that, as a restarted
    # worker would.
    time.sleep(3)

    second = worker(tmp_path, db_url, "--concurrency", "6", "--lease-ttl", "2", "--until-idle")
    out, err = second.communicate(timeout=180)
    assert second.returncode == 0, err

    rooms = storage.list_rooms(db, experiment_id=experiment_id, limit=None)
    assert sorted((r.condition, r.replicate) for r in rooms) == sorted(
        (p.condition.label, p.replicate) for p in ex.planned_rooms(config)
    )
    for record in rooms:
        room = Room.open(db, record.id)
        rows = room.events()
        assert log_problems(rows) == [] and replay_problems(room, rows) == []
        openings = [e for e in rows if e.kind == "human"]
        assert [e.content for e in openings] == ["Negotiate the price of a mug."]
        assert room.status == "terminated", (room.status, room.stop_reason)
        assert sum(1 for e in rows if e.kind == "agent") == 6
    assert storage.get_experiment(db, experiment_id).status == "done"
    db.dispose()


def agent_turns(db: Database, room_ids: list[int]) -> int:
    return sum(1 for room_id in room_ids for e in storage.events(db, room_id) if e.kind == "agent")


def test_rooms_cut_short_by_kill_9_move_again_within_seconds_of_a_restart(
    tmp_path: Path, db_url: str
) -> None:
    # Leases of ten minutes: only recognising the dead worker's leases (same host, process gone)
    # lets the restarted worker move within the 15 s the design promises; waiting out the
    # expiry would take 600 s.
    db = Database(db_url)
    rooms = [
        Room.create(
            db,
            name=f"slow {i}",
            agents=TEMPLATE["agents"],
            model=OfflineModel(latency=0.3),
            termination={"kind": "max_turns", "max_turns": 40},
            planner={"kind": "round_robin", "transitions": None},
        )
        for i in range(3)
    ]
    for room in rooms:
        room.post("talk slowly")
    ids = [r.id for r in rooms]
    first = worker(tmp_path, db_url, "--concurrency", "3", "--lease-ttl", "600")
    try:
        wait_until(lambda: agent_turns(db, ids) >= 3, 60, "the first worker's turns")
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    assert len(held_leases(db, ids)) == 3  # left held by the dead worker
    before = agent_turns(db, ids)

    second = worker(tmp_path, db_url, "--concurrency", "3", "--lease-ttl", "600")
    try:
        # Within 15 s, where the dead worker's 600 s leases would hold the rooms for ten minutes.
        wait_until(lambda: agent_turns(db, ids) > before, 15, "a turn after the restart")
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    for room in rooms:
        rows = room.events()
        assert log_problems(rows) == [] and replay_problems(room, rows) == []
    db.dispose()
