"""A room that reached its turn limit: a new message gets no answer unless the person continues
(``Room.no_answer_reason``, ``Room.post(..., continue_turns=N)``, ``Room.extend_limit``)."""

from __future__ import annotations

import pytest

from conversation.exceptions import ConversationStateError, ConversationValueError
from conversation.models import OfflineModel
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.room import Room
from conversation.termination import Budget, MaxTurns
from storage import Database
from tests.support.room_common import drive_with


def ended_room(db: Database, termination: object = None, **options: object) -> Room:
    room = Room.create(
        db,
        name="limit",
        agents=[{"name": "Alice"}, {"name": "Bob"}],
        planner=RoundRobinRoomPlanner(),
        termination=termination if termination is not None else MaxTurns(2),
        **options,  # type: ignore[arg-type]
    )
    drive_with(room, OfflineModel(replies=["one", "two", "three", "four", "five"]))
    room.post("hi")
    room.run()
    return room


def test_a_room_at_its_turn_limit_says_no_agent_will_answer(db: Database) -> None:
    room = ended_room(db)
    assert room.status == "terminated"
    assert room.no_answer_reason() == "max_turns reached (2)"
    room.post("a follow-up question")  # recorded, but the limit still holds
    assert room.run() == []
    assert room.status == "terminated" and room.no_answer_reason() == "max_turns reached (2)"


def test_continue_turns_raises_the_limit_as_a_settings_change_and_the_agents_answer(
    db: Database,
) -> None:
    room = ended_room(db)
    room.post("a follow-up question", continue_turns=2)
    assert room.no_answer_reason() is None
    taken = room.run()
    assert [(t.speaker, t.result) for t in taken] == [("Alice", "three"), ("Bob", "four")]
    assert room.status == "terminated" and room.stop_reason == "max_turns reached (4)"
    versions = room.config_versions()
    assert [v["changes"] for v in versions] == [[], ["termination"]]
    assert versions[-1]["config"]["termination"]["max_turns"] == 4


def test_a_room_that_can_answer_has_no_reason_and_nothing_to_continue(db: Database) -> None:
    room = ended_room(db, termination=MaxTurns(10))
    assert room.no_answer_reason() is None
    with pytest.raises(ConversationStateError, match="nothing to continue"):
        room.extend_limit(3)
    with pytest.raises(ConversationValueError, match="continue_turns=0"):
        room.post("x", continue_turns=0)
    assert len(room.config_versions()) == 1


def test_a_spent_budget_is_a_reason_too(db: Database) -> None:
    room = ended_room(db, termination=MaxTurns(10), budget=Budget(max_tokens=1))
    # The offline model reports tokens: the budget is spent after the first turn.
    assert room.no_answer_reason() is not None


def test_continuing_is_one_write_the_limit_and_the_message_together(db: Database) -> None:
    """The raised limit and the message were two writes: a message refused after the first (a
    request id already used for other text) left the limit raised with no message, and a double
    click raised it twice. Now both land together or neither does."""
    from conversation.exceptions import RequestConflictError

    room = ended_room(db)
    room.post("first follow-up", continue_turns=2, request_id="r-1")
    again = room.post("first follow-up", continue_turns=2, request_id="r-1")  # a double click
    versions = room.config_versions()
    assert len(versions) == 2 and versions[-1]["config"]["termination"]["max_turns"] == 4
    assert again.content == "first follow-up"
    seqs = [e.seq for e in room.events()]
    notice, message = room.events()[-2:]
    assert notice.kind == "system" and message.content == "first follow-up"
    assert message.seq == notice.seq + 1 and len(seqs) == len(set(seqs))
    with pytest.raises(RequestConflictError):
        room.post("other text", continue_turns=5, request_id="r-1")
    assert len(room.config_versions()) == 2  # nothing raised for the refused message
    assert room.config.termination is not None
