"""The model cache across processes: a turn killed after its model call (answer received, not
committed) is resumed by another process from the cache, at no cost; an experiment run by one
``python -m conversation.worker`` process is re-run from the cache by another, identically."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import storage
from conversation.experiments import Condition, design, rerun_experiment
from conversation.experiments import create as create_experiment
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.room import Room
from storage import Database
from tests.support.room_common import ROOT, child_env, drive_with, integrity, scripted_model

pytestmark = pytest.mark.slow

CHILD = ROOT / "tests" / "support" / "room_crash_child.py"
AGENTS = [{"name": "Alice"}, {"name": "Bob"}, {"name": "Cara"}]


def wait_for_lease_expiry(db: Database, room_id: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        lease = storage.get_lease(db, room_id)
        if lease is None or lease.owner is None or lease.expires_at <= db.now():
            return
        assert time.monotonic() < deadline, "the dead process's lease never expired"
        time.sleep(0.05)


@pytest.mark.parametrize("point", ["after_answer", "before_commit"])
def test_a_turn_killed_after_its_answer_is_resumed_from_the_cache(
    tmp_path: Path, db_url: str, point: str
) -> None:
    db = Database(db_url)
    room = Room.create(
        db, name="crash", agents=AGENTS, planner=RoundRobinRoomPlanner(max_rounds=1), seed=4
    )
    room.post("plan the launch", request_id="h-1")
    db.dispose()
    env = child_env(tmp_path / "child-home", db_url, CONVERSATION_FAULT_POINT=point)
    record = tmp_path / "prompts.jsonl"
    child = subprocess.run(
        [sys.executable, str(CHILD), "--db", db_url, "--room", str(room.id)]
        + ["--record", str(record), "--lease-ttl", "1.5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, (child.returncode, child.stderr)
    assert len(record.read_text().splitlines()) == 1  # the child asked once, then died

    db = Database(db_url)
    try:
        orphan = storage.events(db, room.id)[-1]
        assert (orphan.state, orphan.content) == ("running", "")
        assert storage.models.cache_size(db) == 1  # the answer was kept before the process died
        wait_for_lease_expiry(db, room.id)
        model = scripted_model()
        resumed = drive_with(Room.open(db, room.id), model)
        taken = resumed.run()
        turn = storage.get_event(db, orphan.id)
        assert taken[0].id == orphan.id and turn.state == "done" and turn.content
        assert turn.data["cache_hit"] is True
        assert (turn.input_tokens, turn.output_tokens, turn.cost) == (0, 0, 0.0)
        # Asked only for the turns after it: the resumed turn's answer was the child's.
        assert len(model.prompts) == len(taken) - 1
    finally:
        db.dispose()
    assert integrity(db_url) == "ok"


TEMPLATE = {
    "agents": [
        {"name": "Buyer", "traits": {"role": "buyer"}},
        {"name": "Seller", "traits": {"role": "seller"}},
    ],
    "planner": {"kind": "round_robin", "transitions": None},
    "termination": {"kind": "max_turns", "max_turns": 4},
    "model": {"service": "offline", "model": "offline", "parameters": {"seed": 3}},
    "opening": "Negotiate the price of a mug.",
}


def run_worker_process(tmp_path: Path, db_url: str, name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "conversation.worker", "--db", db_url, "--until-idle"]
        + ["--poll", "0.05"],
        cwd=ROOT,
        env=child_env(tmp_path / name, db_url),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr


def logs(db: Database, experiment_id: int) -> dict[tuple[str, int], list[storage.Event]]:
    return {
        (room.condition, room.replicate): [
            e for e in storage.events(db, int(room.id or 0)) if e.kind in ("human", "agent")
        ]
        for room in storage.list_rooms(db, experiment_id=experiment_id, limit=None)
    }


def test_a_rerun_by_another_worker_process_is_answered_from_the_shared_cache(
    tmp_path: Path, db_url: str
) -> None:
    db = Database(db_url)
    conditions = [Condition("baseline", {}), Condition("rich", {"Buyer": {"budget": "large"}})]
    first = create_experiment(db, "mugs", design(TEMPLATE, conditions, replicates=2))
    db.dispose()
    run_worker_process(tmp_path, db_url, "worker-1")

    db = Database(db_url)
    try:
        original = logs(db, first)
        assert len(original) == 4
        assert not any(
            e.data["cache_hit"] for rows in original.values() for e in rows if e.kind == "agent"
        )
        stored = storage.models.cache_size(db)
        assert stored == 16  # 4 rooms x 4 agent turns, written by the worker process
        again = rerun_experiment(db, first)
    finally:
        db.dispose()
    run_worker_process(tmp_path, db_url, "worker-2")

    db = Database(db_url)
    try:
        rerun = logs(db, again)
        shape = lambda rows: [(e.seq, e.kind, e.speaker, e.content) for e in rows]  # noqa: E731
        assert {k: shape(v) for k, v in rerun.items()} == {k: shape(v) for k, v in original.items()}
        agent = [e for rows in rerun.values() for e in rows if e.kind == "agent"]
        assert len(agent) == 16 and all(e.data["cache_hit"] is True for e in agent)
        assert sum((e.input_tokens or 0) + (e.output_tokens or 0) for e in agent) == 0
        assert storage.models.cache_size(db) == stored  # nothing new was asked
    finally:
        db.dispose()
