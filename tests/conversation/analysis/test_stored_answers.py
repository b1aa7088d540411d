"""An analysis over stored rooms keeps every valid answer, stores each failure with its reason,
and retries only the failed ones (``ui.results.tables``, the API behind the Results page)."""

from __future__ import annotations

import pytest
from edsl import Agent, AgentList

import conversation.models as models
import storage
from conversation import Room
from conversation.models import OfflineModel
from storage import Database
from ui.results import tables

QUESTION = {"type": "yes_no", "name": "answer", "text": "Was a deal reached?"}


@pytest.fixture
def db(db_url: str) -> Database:
    return Database(db_url)


def _rooms(db: Database, n: int) -> list[int]:
    agents = AgentList([Agent(name="Alice", traits={}), Agent(name="Bob", traits={})])
    ids = []
    for i in range(n):
        room = Room.create(db, name=f"r{i}", agents=agents, model=OfflineModel(seed=i))
        room.post(f"room number {i}: agree on a price")
        ids.append(room.id)
    return ids


def test_one_invalid_answer_keeps_the_others_and_is_retried_alone(db, monkeypatch) -> None:
    rooms = _rooms(db, 6)
    asked: list[str] = []
    bad = "room number 3:"

    def reply(user_prompt: str, system_prompt: str) -> str:
        asked.append(user_prompt)
        if bad in user_prompt and sum(bad in p for p in asked) == 1:
            return "maybe"  # EDSL's validation refuses it, the first time only
        return "Yes"

    model = OfflineModel(func=reply)
    monkeypatch.setattr(models, "resolve_model", lambda spec, **kw: model)
    seen: list[tuple[int, int]] = []
    analysis_id = tables.run_analysis(
        db, QUESTION, rooms, model={"service": "offline"}, progress=lambda d, t: seen.append((d, t))
    )
    assert seen[-1] == (6, 6) and len(seen) == 2  # batches of five: progress after each
    stored = {a.room_id: a for a in storage.answers(db, analysis_id)}
    assert [stored[r].answer for r in rooms] == ["Yes", "Yes", "Yes", None, "Yes", "Yes"]
    error = stored[rooms[3]].error
    assert error["code"] == "invalid_answer" and error["raw"] == "maybe"
    assert "validation" in error["message"]
    assert storage.get_analysis(db, analysis_id).status == "failed"
    assert tables.failed_answers(db, analysis_id) == [rooms[3]]

    calls_before = len(asked)
    assert tables.retry_failed_answers(db, analysis_id) == 0
    assert len(asked) == calls_before + 1  # only the failed room was asked again
    stored = {a.room_id: a for a in storage.answers(db, analysis_id)}
    assert stored[rooms[3]].answer == "Yes" and stored[rooms[3]].error is None
    assert storage.get_analysis(db, analysis_id).status == "done"
    assert tables.retry_failed_answers(db, analysis_id) == 0  # nothing left: no call
    assert len(asked) == calls_before + 1


def test_a_failure_that_persists_stays_recorded(db) -> None:
    rooms = _rooms(db, 2)
    spec = {"service": "test", "model": "test", "parameters": {"canned_response": "perhaps"}}
    analysis_id = tables.run_analysis(db, QUESTION, rooms, model=spec)
    assert tables.failed_answers(db, analysis_id) == rooms
    assert tables.retry_failed_answers(db, analysis_id) == 2
    assert storage.get_analysis(db, analysis_id).status == "failed"
    assert all(a.error["raw"] == "perhaps" for a in storage.answers(db, analysis_id))
