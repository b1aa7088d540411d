"""A write planned from a view of a room is refused when an event of that view changed, not only
when one was appended (an approval edits the existing turn: it adds no event)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import storage
from conversation.models import OfflineModel
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.engine import HeldRoom
from conversation.rooms.room import Room
from storage import Database
from tests.support.room_common import drive_with


def paused_and_resumed_draft(db: Database) -> Room:
    """A moderated room whose draft waits, paused and resumed: running, with the draft open."""
    room = Room.create(
        db,
        name="race",
        agents=[{"name": "Alice"}, {"name": "Bob"}],
        planner=RoundRobinRoomPlanner(max_rounds=1),
        moderated=True,
    )
    drive_with(room, OfflineModel(replies=["alice's draft", "bob's draft"]))
    room.post("hi")
    room.run()
    assert room.status == "waiting"
    room.pause()
    room.resume()
    assert room.status == "running" and room.pending() is not None
    return room


def test_an_approval_between_the_plan_and_its_write_refuses_the_write(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine planned to set the room back to ``waiting`` (its draft waits); the approval
    landed before that write, which checked the status, the lease and the last seq (unchanged):
    the room was left ``waiting`` with nothing to approve, and workers skipped it."""
    room = paused_and_resumed_draft(db)
    engine = room._turn_engine()
    token = storage.acquire_lease(db, room.id, "worker", 30)
    assert token is not None
    real = storage.settle_rooms
    approved: list[str] = []

    def approve_first(database: Database, settlements: Any) -> Any:
        draft = room.pending()
        assert draft is not None and draft.state == "waiting"
        draft.approve(by="ann")  # another process decides between the plan and the write
        approved.append("ann")
        return real(database, settlements)

    monkeypatch.setattr(storage, "settle_rooms", approve_first)
    [step] = engine.begin([HeldRoom(room.id, token)])
    assert approved == ["ann"]
    assert step.status == "running" and step.again  # refused: plan again from a fresh read
    assert room.status == "running"
    assert room.pending() is None
    monkeypatch.setattr(storage, "settle_rooms", real)
    storage.release_lease(db, room.id, "worker", token)
    taken = room.run()  # the room goes on: Bob drafts
    assert [(t.speaker, t.state) for t in taken] == [("Bob", "waiting")]
    assert room.status == "waiting"


def test_a_held_log_that_missed_a_decision_is_read_again(db: Database) -> None:
    """A worker holding the room kept its log between steps; a decision made meanwhile by a
    person changed a row it had already read (no new row): the next plan sees the decision."""
    room = paused_and_resumed_draft(db)
    engine = room._turn_engine()
    token = storage.acquire_lease(db, room.id, "worker", 30)
    assert token is not None
    held = HeldRoom(room.id, token)
    room.pause()
    [step] = engine.begin([held])  # reads the log (draft waiting) and waits: the room is paused
    assert step.status == "paused" and held.log is not None
    pending = room.pending()
    assert pending is not None
    pending.approve(by="ann")
    room.resume()
    [step] = engine.begin([held])  # the same held log: the approval must be seen
    assert room.status == "running", (step, room.status)
    assert step.kind == "claim" or step.status == "running"
    storage.release_lease(db, room.id, "worker", token)


def test_storage_fences_compare_the_edits_read_with_the_log(db: Database) -> None:
    """The fence itself: a settlement or a claim made with the room's ``edits`` as read is
    refused once a person changed an event of the room (a decision), and applies otherwise."""
    room = paused_and_resumed_draft(db)
    token = storage.acquire_lease(db, room.id, "worker", 30)
    assert token is not None
    seen = storage.get_room(db, room.id).edits
    last = storage.latest_seq(db, room.id)
    waiting = storage.RoomSettlement(
        room_id=room.id, token=token, status="waiting", expected_last_seq=last, expected_edits=seen
    )
    draft = room.pending()
    assert draft is not None
    draft.approve(by="ann")
    assert storage.get_room(db, room.id).edits == seen + 1
    assert storage.settle_rooms(db, [waiting]) == [False]
    claim = storage.TurnClaim(
        room_id=room.id,
        token=token,
        expected_last_seq=last,
        expected_edits=seen,
        speaker="Bob",
        request_id=f"turn-{last + 1}",
        activity=1,
        round=0,
    )
    assert storage.claim_turns(db, [claim]) == [None]
    fresh = dataclasses.replace(claim, expected_edits=seen + 1)
    assert storage.claim_turns(db, [fresh])[0] is not None
