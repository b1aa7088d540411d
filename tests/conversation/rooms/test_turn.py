"""``Turn`` (docs/design.md, "Durable turns") in a durable room: moderation (approve, edit, deny, abandon, stop) and
failures (a permanent error, transient errors retried with the count persisted, an exhausted
budget that a person resumes or abandons)."""

from __future__ import annotations

from typing import Any

import pytest

import storage
from conversation.exceptions import ConversationStateError, ConversationValueError
from conversation.models import OfflineModel
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.room import Room
from storage import Database
from tests.support.room_common import drive_with, log_problems, replay_problems

AGENTS = [{"name": "Alice"}, {"name": "Bob"}]


def make_room(db: Database, model: Any, **options: Any) -> Room:
    options.setdefault("agents", AGENTS)
    options.setdefault("planner", RoundRobinRoomPlanner(max_rounds=1))
    room = Room.create(db, name="turns", **options)
    drive_with(room, model)
    return room


class BadRequest(Exception):
    """A provider error with HTTP status 400: the same call would fail again."""

    status_code = 400


class Unavailable(Exception):
    """HTTP 503: transient."""

    status_code = 503


# -- moderation -------------------------------------------------------------------------------------


def test_a_draft_waits_for_a_person_and_survives_a_restart(db: Database, db_url: str) -> None:
    model = OfflineModel(replies=["my draft", "bob says"])
    room = make_room(db, model, moderated=True)
    room.post("hi")
    taken = room.run()
    assert [(t.speaker, t.state) for t in taken] == [("Alice", "waiting")]
    draft = taken[0]
    assert draft.waiting == [{"draft": "my draft", "speaker": "Alice"}]
    assert draft.result is None and draft.outputs == {}
    assert room.status == "waiting"
    assert room.step() is None and model.calls == 1  # nothing happens while it waits
    db.dispose()
    fresh = Database(db_url)
    try:
        again = Room.open(fresh, room.id)
        pending = again.pending()
        assert pending is not None and pending.id == draft.id
        assert (pending.state, pending.waiting[0]["draft"]) == ("waiting", "my draft")
        approved = pending.approve()
        assert (approved.state, approved.result) == ("done", "my draft")
        assert again.status == "running"
        with pytest.raises(ConversationStateError, match="cannot approve"):
            pending.approve()  # two tabs approving: the second changes nothing
        drive_with(again, model)
        assert [(t.speaker, t.state) for t in again.run()] == [("Bob", "waiting")]
    finally:
        fresh.dispose()


def test_approve_with_an_edit_publishes_the_edit_and_keeps_the_draft(db: Database) -> None:
    room = make_room(db, OfflineModel(replies=["rude draft"]), moderated=True)
    room.post("hi")
    turn = room.step()
    assert turn is not None
    with pytest.raises(ConversationValueError, match="non-empty"):
        turn.approve("   ")
    turn.approve("polite version")
    assert turn.result == "polite version"
    assert turn.outputs == {"result": "polite version", "passed": False, "draft": "rude draft"}
    assert room.events()[1].content == "polite version"


def test_deny_tells_the_agent_why_and_asks_again(db: Database) -> None:
    model = OfflineModel(replies=["first draft", "second draft", "bob draft"])
    room = make_room(db, model, moderated=True, max_denials=2)
    room.post("hi")
    turn = room.step()
    assert turn is not None
    with pytest.raises(ConversationValueError, match="reason"):
        turn.deny("")
    turn.deny("please mention the budget")
    assert (turn.state, room.status) == ("running", "running")
    again = room.step()
    assert again is not None and again.id == turn.id  # the same turn, asked again
    assert (again.state, again.waiting[0]["draft"]) == ("waiting", "second draft")
    system, user = model.prompts[-1]
    assert "please mention the budget" in user and "first draft" in user
    assert "please mention the budget" not in model.prompts[0][1]
    assert again.inputs["denials"] == [
        {"draft": "first draft", "reason": "please mention the budget", "by": "user"}
    ]
    again.approve()
    assert [e.seq for e in room.events()] == [1, 2]  # no row per attempt


def test_more_denials_than_allowed_abandon_the_turn_and_the_room_goes_on(db: Database) -> None:
    model = OfflineModel(replies=["d1", "d2", "bob draft"])
    room = make_room(db, model, moderated=True, max_denials=1)
    room.post("hi")
    turn = room.step()
    assert turn is not None
    turn.deny("no")
    assert room.step() is not None
    turn.refresh().deny("still no")
    assert turn.state == "abandoned"
    assert len(turn.inputs["denials"]) == 2
    next_turn = room.step()
    assert next_turn is not None and next_turn.speaker == "Bob"
    assert model.calls == 3
    with pytest.raises(ConversationStateError, match="cannot deny"):
        turn.deny("again")


def test_abandon_and_stop_of_a_waiting_draft(db: Database) -> None:
    room = make_room(db, OfflineModel(replies=["a", "b", "c"]), moderated=True)
    room.post("hi")
    first = room.step()
    assert first is not None
    first.abandon()
    assert first.state == "abandoned" and first.result is None
    second = room.step()
    assert second is not None and second.speaker == "Bob"
    second.stop()
    assert second.state == "stopped"
    assert room.step() is None and room.status == "settled"
    with pytest.raises(ConversationStateError, match="cannot resume"):
        second.resume()
    assert replay_problems(room) == []  # abandoned and stopped turns count as passes


def test_turn_refuses_non_turn_events(db: Database) -> None:
    from conversation.rooms.turn import Turn

    room = make_room(db, OfflineModel(replies=["x"]))
    event = room.post("hi")
    with pytest.raises(ConversationValueError, match="human event, not a turn"):
        Turn(db, event)
    with pytest.raises(ConversationValueError, match="does not belong"):
        other = make_room(db, OfflineModel(replies=["y"]))
        other.turn(event.id)


# -- failures ---------------------------------------------------------------------------------------


def test_a_permanent_error_fails_the_turn_and_the_room(db: Database) -> None:
    model = OfflineModel(replies=["never used"], fail_on={1: BadRequest("invalid model parameter")})
    room = make_room(db, model, retry={"max_attempts": 4, "base_delay": 0})
    room.post("hi")
    assert room.run() == []
    turn = room.turns()[0]
    assert turn.state == "failed" and model.calls == 1  # a 400 is not retried
    assert turn.error == {
        "type": "BadRequest",
        "code": "400",
        "message": "invalid model parameter",
    }
    assert turn.attempts == 1
    assert room.status == "failed"
    assert "Alice's turn (seq 2) failed: BadRequest" in (room.stop_reason or "")
    assert room.step() is None


def test_transient_errors_are_retried_and_each_try_is_persisted(db: Database) -> None:
    seen: list[tuple[int, str | None]] = []

    def on_third_call(user_prompt: str, system_prompt: str) -> str:
        row = storage.events(db, room.id)[1]  # what a restarted worker would read now
        seen.append((row.attempts, (row.error or {}).get("type")))
        return "made it"

    model = OfflineModel(
        func=on_third_call, fail_on={1: Unavailable("busy"), 2: ConnectionError("reset")}
    )
    room = make_room(db, model, retry={"max_attempts": 3, "base_delay": 0})
    room.post("hi")
    turn = room.step()
    assert turn is not None
    assert seen == [(2, "ConnectionError")]  # both failed tries were on the row before the third
    assert (turn.state, turn.result, turn.attempts, turn.error) == ("done", "made it", 3, None)
    assert turn.refresh().event.next_attempt_at is None


def test_an_exhausted_budget_interrupts_and_resume_retries_it(db: Database) -> None:
    model = OfflineModel(
        replies=["finally", "bob"], fail_on={n: Unavailable(f"busy {n}") for n in (1, 2)}
    )
    room = make_room(db, model, retry={"max_attempts": 2, "base_delay": 0})
    room.post("hi")
    assert room.run() == []
    turn = room.pending()
    assert turn is not None and turn.state == "interrupted"
    assert (turn.attempts, turn.error["code"]) == (2, "503")  # type: ignore[index]
    assert room.status == "failed"
    assert room.step() is None and model.calls == 2
    room.resume()  # a person retries it
    assert room.status == "running" and turn.refresh().state == "running"
    taken = room.run()
    assert [(t.id, t.speaker, t.result) for t in taken] == [
        (turn.id, "Alice", "finally"),
        (taken[1].id, "Bob", "bob"),
    ]
    assert room.status == "settled" and log_problems(room.events()) == []


def test_abandoning_an_interrupted_turn_skips_it(db: Database) -> None:
    model = OfflineModel(replies=["bob speaks"], fail_on={1: TimeoutError("slow")})
    room = make_room(db, model, retry={"max_attempts": 1, "base_delay": 0})
    room.post("hi")
    room.run()
    turn = room.pending()
    assert turn is not None and turn.state == "interrupted"
    turn.abandon()
    assert (turn.state, room.status) == ("abandoned", "running")
    taken = room.run()
    assert [(t.speaker, t.result) for t in taken] == [("Bob", "bob speaks")]
    assert room.status == "settled"
    with pytest.raises(ConversationStateError, match="cannot abandon"):
        turn.abandon()


def test_an_empty_model_answer_is_a_failed_turn_not_an_empty_message(db: Database) -> None:
    room = make_room(db, OfflineModel(replies=[""]), retry={"max_attempts": 1, "base_delay": 0})
    room.post("hi")
    room.run()
    turn = room.turns()[0]
    assert turn.state in ("failed", "interrupted")
    assert turn.result is None and turn.error is not None
    assert turn.error["code"] == "empty_response"
    assert not [e for e in room.events() if e.kind == "agent" and e.state == "done"]


def test_a_pass_in_a_moderated_room_needs_no_approval(db: Database) -> None:
    room = make_room(db, OfflineModel(replies=["PASS", "a draft"]), moderated=True)
    room.post("hi")
    taken = room.run()
    assert [(t.speaker, t.state, t.passed) for t in taken] == [
        ("Alice", "done", True),
        ("Bob", "waiting", False),
    ]


def test_stopping_a_running_turn_counts_it_as_a_pass(db: Database) -> None:
    room = make_room(db, OfflineModel(replies=["bob speaks"]))
    room.post("hi")
    token = storage.acquire_lease(db, room.id, "crashed-worker", 0.05)
    assert token is not None
    claimed = storage.claim_turn(  # a worker claimed Alice's turn, then vanished
        db,
        room.id,
        token=token,
        expected_last_seq=1,
        speaker="Alice",
        request_id="turn-2",
        activity=1,
        round=0,
    )
    assert claimed is not None
    turn = room.pending()
    assert turn is not None and turn.state == "running"
    with pytest.raises(ConversationStateError, match="cannot approve"):
        turn.approve()
    turn.stop()
    assert turn.state == "stopped" and room.pending() is None
    import time

    time.sleep(0.1)  # the vanished worker's lease runs out
    taken = room.run()
    assert [(t.speaker, t.result) for t in taken] == [("Bob", "bob speaks")]
    assert replay_problems(room) == []


def test_a_turn_cut_off_by_stop_does_not_count_toward_the_turn_limit(db: Database) -> None:
    from conversation.termination import MaxTurns

    room = make_room(
        db,
        OfflineModel(replies=["one", "two", "three"]),
        planner=RoundRobinRoomPlanner(),
        termination=MaxTurns(2),
    )
    room.post("hi")
    token = storage.acquire_lease(db, room.id, "crashed-worker", 0.05)
    assert token is not None
    assert storage.claim_turn(  # Alice's turn is in flight when the person stops the room
        db,
        room.id,
        token=token,
        expected_last_seq=1,
        speaker="Alice",
        request_id="turn-2",
        activity=1,
        round=0,
    )
    room.stop()
    assert room.status == "stopped"
    room.post("please go on")  # re-opens the room
    import time

    time.sleep(0.1)  # the vanished worker's lease runs out
    taken = room.run()
    # The stopped turn had no message: the two turns of the limit are both still to come.
    assert [(t.speaker, t.result) for t in taken] == [("Alice", "one"), ("Bob", "two")]
    assert room.status == "terminated" and room.stop_reason == "max_turns reached (2)"
    assert replay_problems(room) == []


def test_a_decision_is_bound_to_the_draft_the_person_read(db: Database) -> None:
    """A second moderator's Approve, clicked while the first denied the draft and the agent drafted
    again, approved text they never read; bound to the draft they saw, it is refused."""
    from conversation.rooms.turn import DraftChanged

    room = make_room(db, OfflineModel(replies=["first draft", "second draft"]), moderated=True)
    room.post("hi")
    [draft] = room.run()
    read_by_ann = draft.draft_version  # ann reads "first draft"
    bob = room.turn(draft.id)
    bob.deny("too short", by="bob", seen=bob.draft_version)
    [again] = room.run()
    assert again.id == draft.id and again.waiting[0]["draft"] == "second draft"
    with pytest.raises(DraftChanged, match="changed since you read it; read it again"):
        room.turn(draft.id).approve(by="ann", seen=read_by_ann)
    with pytest.raises(DraftChanged):
        room.turn(draft.id).deny("no", by="ann", seen=read_by_ann)
    turn = room.turn(draft.id)
    assert turn.state == "waiting" and turn.waiting[0]["draft"] == "second draft"
    turn.approve(by="ann", seen=turn.draft_version)  # read again: it applies
    assert room.turn(draft.id).result == "second draft"
