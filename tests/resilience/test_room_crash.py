"""Crash safety: a process killed (SIGKILL) at each point of a turn, then a restart.

The child (``tests/support/room_crash_child.py``) drives a room with the scripted model and kills
itself through the driver's fault hook (``CONVERSATION_FAULT_POINT``). The parent then opens a new
``Database`` and finishes the room. A twin room, driven with no crash, is the control: the model's
replies depend on the prompts only, so the crashed room must end with exactly the control's log
(no gap, no duplicate, the same speakers), and the resumed turn must be asked exactly the prompt
the control's turn was asked (built from the events before it only, even though a human message
arrived after it was claimed).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import storage
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.engine import FAULT_POINTS
from conversation.rooms.room import Room
from conversation.text.transcript import parse_transcript
from storage import Database
from tests.support.room_common import (
    ROOT,
    child_env,
    drive_with,
    integrity,
    log_problems,
    replay_problems,
    scripted_model,
    transcript_of,
)

CHILD = ROOT / "tests" / "support" / "room_crash_child.py"
AGENTS = [{"name": "Alice"}, {"name": "Bob"}, {"name": "Cara"}]

pytestmark = pytest.mark.slow


def make_room(db: Database, name: str, **options: object) -> Room:
    return Room.create(
        db,
        name=name,
        agents=AGENTS,
        planner=RoundRobinRoomPlanner(max_rounds=2),
        seed=5,
        # These tests compare the prompts the model is asked: no answers from the model cache
        # (the twin rooms share a seed and prompts; tests/resilience/test_model_cache covers it).
        use_cache=False,
        **options,  # type: ignore[arg-type]
    )


def run_child(
    tmp_path: Path, db_url: str, room_id: int, point: str | None, *extra: str
) -> tuple[subprocess.CompletedProcess[str], list[tuple[str, str]]]:
    record = tmp_path / f"prompts-{room_id}.jsonl"
    env = child_env(tmp_path / "child-home", db_url)
    if point is not None:
        env["CONVERSATION_FAULT_POINT"] = point
    done = subprocess.run(
        [sys.executable, str(CHILD), "--db", db_url, "--room", str(room_id)]
        + ["--record", str(record), "--lease-ttl", "1.5", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    prompts = []
    if record.exists():
        for line in record.read_text().splitlines():
            item = json.loads(line)
            prompts.append((item["system"], item["user"]))
    return done, prompts


def wait_for_lease_expiry(db: Database, room_id: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        lease = storage.get_lease(db, room_id)
        if lease is None or lease.owner is None or lease.expires_at <= db.now():
            return
        assert time.monotonic() < deadline, "the dead process's lease never expired"
        time.sleep(0.05)


@pytest.mark.parametrize("point", FAULT_POINTS)
def test_a_turn_killed_at_any_point_is_resumed_once_with_the_same_prompt(
    tmp_path: Path, db_url: str, point: str
) -> None:
    db = Database(db_url)
    crashed, control = make_room(db, "crashed"), make_room(db, "control")
    for room in (crashed, control):
        drive_with(room, scripted_model())
        room.post("plan the launch", request_id="h-1")
        room.step()
        room.step()
    control_model = scripted_model()
    drive_with(control, control_model)
    fourth = control.step()  # the turn the child will die in
    assert fourth is not None and fourth.seq == 4
    control_prompt = control_model.prompts[0]
    db.dispose()

    child, child_prompts = run_child(tmp_path, db_url, crashed.id, point)
    assert child.returncode == -signal.SIGKILL, (child.returncode, child.stdout, child.stderr)
    assert "finished" not in child.stdout

    # -- restart: a new process's view, through a new Database object --
    db = Database(db_url)
    try:
        rows = storage.events(db, crashed.id)
        orphan = rows[-1]
        assert [r.seq for r in rows] == [1, 2, 3, 4]
        assert (orphan.state, orphan.content, orphan.speaker) == ("running", "", fourth.speaker)
        assert orphan.request_id == "turn-4"
        if point in ("after_answer", "before_commit"):
            assert child_prompts == [control_prompt]  # the child had asked the same question
        else:
            assert child_prompts == []
        # A person writes while the turn is orphaned: it must not leak into the resumed prompt.
        for room_id in (crashed.id, control.id):
            Room.open(db, room_id).post("a late message", request_id="h-2")
        wait_for_lease_expiry(db, crashed.id)
        model = scripted_model()
        resumed = drive_with(Room.open(db, crashed.id), model)
        taken = resumed.run()
        assert taken[0].id == orphan.id  # the same row, resumed; not a new turn
        assert model.prompts[0] == control_prompt
        assert [r["seq"] for r in parse_transcript(model.prompts[0][1])] == [1, 2, 3]
        assert "a late message" not in model.prompts[0][1]
        drive_with(Room.open(db, control.id), scripted_model()).run()

        final = storage.events(db, crashed.id)
        expected = storage.events(db, control.id)
        assert transcript_of(final) == transcript_of(expected)
        assert log_problems(final) == []
        assert replay_problems(resumed, final) == []
        assert final[3].attempts == 1 and final[3].state == "done"
        assert resumed.status == "settled"
    finally:
        db.dispose()
    assert integrity(db_url) == "ok"


def test_a_child_without_a_fault_point_finishes_its_turns(tmp_path: Path, db_url: str) -> None:
    """Negative control: the crash above comes from the fault hook, not from the child itself."""
    db = Database(db_url)
    room = make_room(db, "calm")
    room.post("plan the launch")
    db.dispose()
    child, prompts = run_child(tmp_path, db_url, room.id, None)
    assert child.returncode == 0, child.stderr
    assert "finished" in child.stdout and len(prompts) >= 3
    db = Database(db_url)
    try:
        assert Room.open(db, room.id).status == "settled"
    finally:
        db.dispose()


def test_the_retry_budget_survives_a_crash(tmp_path: Path, db_url: str) -> None:
    class Unavailable(Exception):
        status_code = 503

    db = Database(db_url)
    room = make_room(db, "flaky", retry={"max_attempts": 2, "base_delay": 0.2})
    room.post("plan the launch")
    db.dispose()
    child, _ = run_child(tmp_path, db_url, room.id, None, "--fail-first")
    assert child.returncode == -signal.SIGKILL, child.stderr
    db = Database(db_url)
    try:
        orphan = storage.events(db, room.id)[-1]
        assert (orphan.state, orphan.attempts) == ("running", 1)
        assert orphan.error is not None and orphan.error["code"] == "503"
        assert orphan.next_attempt_at is not None
        wait_for_lease_expiry(db, room.id)
        from conversation.models import OfflineModel

        model = OfflineModel(replies=["never"], fail_on={1: Unavailable("still down")})
        again = drive_with(Room.open(db, room.id), model)
        assert again.run() == []
        turn = again.turns()[0]
        # One try here: 1 before the crash + 1 = the budget of 2. A reset budget would retry.
        assert model.calls == 1
        assert (turn.id, turn.state, turn.attempts) == (orphan.id, "interrupted", 2)
        assert again.status == "failed"
    finally:
        db.dispose()
    assert integrity(db_url) == "ok"
