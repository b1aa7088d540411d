"""Analyses asked in the background (issue 24): starting one stores its planned rooms and
returns at once; a runner asks them a chunk at a time and stores each answer; a runner killed
mid-analysis is resumed without asking an answered room again; two runners never ask the same
room; a failed answer retried successfully makes the analysis done. Both backends."""

from __future__ import annotations

import collections
import re
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from edsl import Agent, AgentList

import conversation.models as models
import storage
from conversation import Room
from conversation.analysis import runs
from conversation.models import OfflineModel
from conversation.worker import AnalysisRunner, BackgroundWorker
from storage import Database
from tests.support.room_common import ROOT, child_env
from tests.support.waiting import wait_until

QUESTION = {"type": "yes_no", "name": "answer", "text": "Was a deal reached?"}
MODEL = {"service": "offline"}
ROOM_MARK = re.compile(r"room number (\d+):")


def make_rooms(db: Database, n: int) -> list[int]:
    agents = AgentList([Agent(name="Alice", traits={}), Agent(name="Bob", traits={})])
    ids = []
    for i in range(n):
        room = Room.create(db, name=f"r{i}", agents=agents, model=OfflineModel(seed=i))
        room.post(f"room number {i}: agree on a price")
        ids.append(room.id)
    return ids


class Asked:
    """An offline model that answers "Yes" (or ``replies[i]`` once, for room i) and counts the
    times each room was asked."""

    def __init__(self, delay: float = 0.0, replies: dict[int, str] | None = None) -> None:
        self.counts: collections.Counter[int] = collections.Counter()
        self.delay = delay
        self.replies = dict(replies or {})
        self.lock = threading.Lock()

    def reply(self, user_prompt: str, system_prompt: str) -> str:
        room = int(ROOM_MARK.search(user_prompt).group(1))  # type: ignore[union-attr]
        with self.lock:
            self.counts[room] += 1
            first = self.counts[room] == 1
        time.sleep(self.delay)
        return self.replies.get(room, "Yes") if first else "Yes"


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Asked:
    model = Asked()
    monkeypatch.setattr(models, "resolve_model", lambda spec, **kw: OfflineModel(func=model.reply))
    return model


def test_a_started_analysis_is_asked_in_the_background(db: Database, asked: Asked) -> None:
    rooms = make_rooms(db, 7)
    analysis_id = runs.start_analysis(db, QUESTION, rooms, model=MODEL)
    progress = runs.progress_of(db, analysis_id)
    assert (progress.planned, progress.answered, progress.state) == (7, 0, "running")
    assert progress.summary() == "0 of 7 answered, 7 still being asked"
    assert not asked.counts  # nothing asked yet: the caller returned at once
    worker = BackgroundWorker(db, poll_interval=0.05).start()
    try:
        worker.wake()
        wait_until(lambda: runs.progress_of(db, analysis_id).to_come == 0, 90, "every answer")
    finally:
        worker.stop()
    assert runs.progress_of(db, analysis_id).summary() == "7 of 7 answered"
    assert storage.get_analysis(db, analysis_id).status == "done"
    assert [a.answer for a in storage.answers(db, analysis_id)] == ["Yes"] * 7
    assert sorted(asked.counts.values()) == [1] * 7


def test_a_runner_stopped_after_one_chunk_is_resumed_without_asking_again(
    db: Database, asked: Asked, monkeypatch: pytest.MonkeyPatch
) -> None:
    rooms = make_rooms(db, 7)
    analysis_id = runs.start_analysis(db, QUESTION, rooms, model=MODEL)
    assert runs.ask_next(db, "analyses:elsewhere:1:first", limit=3) == 3  # then it "stops"
    assert runs.progress_of(db, analysis_id).summary() == "3 of 7 answered, 4 still being asked"
    # A runner of another host died holding the next chunk: its claim runs out, then is taken.
    held = storage.claim_answers(
        db, analysis_id, "analyses:elsewhere:2:dead", limit=2, ttl_seconds=600
    )
    assert held == rooms[3:5]
    assert AnalysisRunner(db, chunk=3).run(until_idle=True) == 2  # the rest, not the held ones
    assert runs.progress_of(db, analysis_id).summary() == "5 of 7 answered, 2 still being asked"
    now = db.now
    monkeypatch.setattr(db, "now", lambda: now() + timedelta(seconds=601))  # the claim ran out
    assert AnalysisRunner(db, chunk=3).run(until_idle=True) == 2
    assert runs.progress_of(db, analysis_id).summary() == "7 of 7 answered"
    assert sorted(asked.counts.values()) == [1] * 7  # no room asked twice
    assert storage.get_analysis(db, analysis_id).status == "done"


@pytest.mark.slow
def test_a_runner_killed_mid_analysis_is_resumed_at_once(
    db: Database, db_url: str, asked: Asked, tmp_path: Path
) -> None:
    rooms = make_rooms(db, 6)
    analysis_id = runs.start_analysis(db, QUESTION, rooms, model=MODEL)
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/support/analysis_child.py"), db_url,
         str(analysis_id), "2"],
        env=child_env(tmp_path / "home", db_url),
    )  # fmt: skip
    try:
        # The child answered its first chunk and is asking its second (its model hangs).
        wait_until(
            lambda: runs.progress_of(db, analysis_id) == runs.AnalysisProgress(2, 0, 2, 2),
            timeout=120,
        )
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # Same host, process gone: its claims are freed at once (not after ANSWER_CLAIM_SECONDS).
    runner = AnalysisRunner(db, chunk=2)
    assert runner.run(until_idle=True) == 4
    assert runs.progress_of(db, analysis_id).summary() == "6 of 6 answered"
    assert set(asked.counts) == {2, 3, 4, 5} and set(asked.counts.values()) == {1}


def test_two_runners_never_ask_the_same_room(db: Database, db_url: str) -> None:
    model = Asked(delay=0.02)
    original = models.resolve_model
    models.resolve_model = lambda spec, **kw: OfflineModel(func=model.reply)  # type: ignore
    other = Database(db_url)
    try:
        rooms = make_rooms(db, 12)
        analysis_id = runs.start_analysis(db, QUESTION, rooms, model=MODEL)
        first = AnalysisRunner(db, chunk=2, poll_interval=0.05).start()
        second = AnalysisRunner(other, chunk=2, poll_interval=0.05).start()
        wait_until(lambda: runs.progress_of(db, analysis_id).to_come == 0, 90, "every answer")
        first.stop()
        second.stop()
    finally:
        models.resolve_model = original
        other.dispose()
    assert sorted(model.counts) == list(range(12))
    assert set(model.counts.values()) == {1}
    assert first.answers_asked + second.answers_asked == 12
    assert storage.get_analysis(db, analysis_id).status == "done"


def test_a_failed_answer_retried_successfully_makes_the_analysis_done(
    db: Database, asked: Asked
) -> None:
    asked.replies = {2: "maybe"}  # refused by EDSL's validation, the first time only
    rooms = make_rooms(db, 4)
    analysis_id = runs.start_analysis(db, QUESTION, rooms, model=MODEL)
    AnalysisRunner(db).run(until_idle=True)
    progress = runs.progress_of(db, analysis_id)
    assert progress.summary() == "3 of 4 answered, 1 failed"
    assert progress.state == "done with 1 failed"
    assert storage.get_analysis(db, analysis_id).status == "failed"
    assert runs.retry_failed_answers(db, analysis_id, wait=False) == 1  # planned again
    assert runs.progress_of(db, analysis_id).state == "running"
    assert storage.get_analysis(db, analysis_id).status == "running"
    AnalysisRunner(db).run(until_idle=True)
    assert runs.progress_of(db, analysis_id).state == "done"
    assert storage.get_analysis(db, analysis_id).status == "done"
    assert asked.counts[2] == 2 and asked.counts[0] == 1
    answer = {a.room_id: a for a in storage.answers(db, analysis_id)}[rooms[2]]
    assert answer.answer == "Yes" and answer.error is None and answer.state == "answered"


def test_a_room_deleted_while_planned_is_left_out(db: Database, asked: Asked) -> None:
    rooms = make_rooms(db, 3)
    analysis_id = runs.start_analysis(db, QUESTION, rooms, model=MODEL)
    held = storage.claim_answers(db, analysis_id, "analyses:h:1:x", limit=3, ttl_seconds=60)
    storage.delete_room(db, rooms[1])
    storage.free_answer_claims_of(db, ["analyses:h:1:x"])
    assert held == rooms
    AnalysisRunner(db).run(until_idle=True)
    assert runs.progress_of(db, analysis_id).summary() == "2 of 2 answered"
    assert set(asked.counts) == {0, 2}
