"""Streaming across processes (issue 20), on SQLite and PostgreSQL: a worker process streams a
turn while this process reads its partial draft, stops it, or SIGKILLs the worker mid-stream (the
partial never reaches the log, it is discarded with a record, and the turn resumes)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import storage
from conversation import OfflineModel, Room
from conversation.access.roles import Actor, Role
from conversation.rooms.engine.streaming_call import STOPPED_WHILE_DRAFTING
from storage import Database
from tests.support.room_common import ROOT, child_env

CHILD = ROOT / "tests" / "support" / "stream_child.py"
RATE = "20"  # words a second: the offline model's ~20-60 word replies take seconds

pytestmark = pytest.mark.slow


def make_room(db: Database) -> Room:
    # an unscripted offline model is stored as a spec: the child process rebuilds it
    room = Room.create(
        db,
        name="streamed",
        agents=[{"name": "Alice"}, {"name": "Bob"}],
        model=OfflineModel(max_words=60, seed=3),
        seed=3,
        use_cache=False,
    )
    room.post("Tell me about the plan in detail, please.")
    return room


def start_child(tmp_path: Path, db_url: str, room: Room, *extra: str) -> subprocess.Popen[str]:
    env = child_env(tmp_path / "child-home", db_url, ROOMS_OFFLINE_WORDS_PER_SECOND=RATE)
    return subprocess.Popen(
        [sys.executable, str(CHILD), "--db", db_url, "--room", str(room.id), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def drafts_until(
    db: Database, room: Room, done, timeout: float = 60.0
) -> list[storage.PartialDraft]:
    seen: list[storage.PartialDraft] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not done(seen):
        draft = storage.room_draft(db, room.id)
        if draft is not None and (not seen or seen[-1].text != draft.text):
            seen.append(draft)
        time.sleep(0.03)
    return seen


def test_the_app_reads_the_partial_draft_the_worker_process_writes(db, tmp_path, db_url) -> None:
    room = make_room(db)
    child = start_child(tmp_path, db_url, room)
    seen = drafts_until(db, room, lambda s: child.poll() is not None)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    lengths = {len(d.text) for d in seen}
    assert len(lengths) >= 3, (lengths, out)
    [_, turn] = room.events()
    assert turn.state == "done"
    assert all(turn.content.startswith(d.text) for d in seen)
    assert storage.room_draft(db, room.id) is None


def test_a_stop_from_the_app_cancels_the_worker_process_call(db, tmp_path, db_url) -> None:
    room = make_room(db)
    child = start_child(tmp_path, db_url, room)
    seen = drafts_until(db, room, lambda s: bool(s) and len(s[-1].text.split()) >= 3)
    assert seen, child.communicate(timeout=5)
    moderator = Actor("mod@lab", Role.MODERATOR)
    assert room.turn(seen[-1].event_id).stop_drafting(actor=moderator)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert "finished running" in out
    turn = room.turn(seen[-1].event_id)
    [denial] = turn.inputs["denials"]
    assert (denial["reason"], denial["by"]) == (STOPPED_WHILE_DRAFTING, "mod@lab")
    assert len(denial["draft"].split()) < 40  # cut short, not the whole reply


def test_sigkill_mid_stream_leaves_no_partial_in_the_log_and_the_turn_resumes(
    db, tmp_path, db_url, monkeypatch
) -> None:
    room = make_room(db)
    child = start_child(tmp_path, db_url, room, "--lease-ttl", "1.5")
    seen = drafts_until(db, room, lambda s: bool(s) and len(s[-1].text.split()) >= 3)
    assert seen, child.communicate(timeout=5)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    partial = seen[-1]
    # the log: the running turn, no content, nothing of the partial
    [_, turn] = room.events()
    assert (turn.state, turn.content) == ("running", "")
    time.sleep(1.6)  # the dead worker's lease runs out: its draft reads as none at once
    assert storage.room_draft(db, room.id) is None
    monkeypatch.setenv("ROOMS_OFFLINE_WORDS_PER_SECOND", "200")
    [resumed] = Room.open(db, room.id).run(max_turns=1)
    assert (resumed.id, resumed.state) == (partial.event_id, "done")
    [discard] = storage.get_event(db, resumed.id).data["discarded_drafts"]
    assert discard["why"] == "crash or lost lease"
    assert discard["chars"] >= len(partial.text)
    assert all(e.content != partial.text for e in room.events())
