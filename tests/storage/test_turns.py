"""Turns: claim checks, fenced commits (zombie writes rejected), group commit, moderation, retries."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

import storage
from storage import Database, StorageValueError, TurnCommit
from storage.errors import InvalidTransition
from tests.support.clocks import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db(db_url: str, clock: FakeClock):
    with Database(db_url, clock=clock) as database:
        yield database


@pytest.fixture
def room(db: Database) -> int:
    room_id = storage.create_room(db, "room", {"moderated": False}, status="running")
    storage.append_message(db, room_id, "human", "user", "build a login form", request_id="h-1")
    return room_id


def claim(db: Database, room: int, token: int, last: int, speaker: str = "Alice", **kw):
    return storage.claim_turn(
        db,
        room,
        token=token,
        expected_last_seq=last,
        speaker=speaker,
        request_id=kw.pop("request_id", f"{room}:{last + 1}:{speaker}"),
        activity=1,
        round=0,
        **kw,
    )


def test_claim_inserts_a_running_turn_at_the_next_seq(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1, saw=[1], model="test/offline", attempts=0)
    assert turn is not None
    assert (turn.seq, turn.state, turn.kind, turn.speaker) == (2, "running", "agent", "Alice")
    assert turn.saw == [1] and turn.model == "test/offline" and turn.content == ""
    assert storage.get_event(db, turn.id) == turn
    assert storage.open_turn(db, room) == turn


def test_claim_refuses_a_stale_expected_last_seq(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    storage.append_message(db, room, "human", "user", "a second message arrived")
    assert claim(db, room, token, 1) is None  # the planner saw seq 1; the log is at 2 now
    assert claim(db, room, token, 3) is None  # and never ahead of the log
    assert claim(db, room, token, 2) is not None


@pytest.mark.parametrize("open_state", ["running", "waiting", "interrupted"])
def test_claim_refuses_while_a_turn_is_open(db: Database, room: int, open_state: str) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    first = claim(db, room, token, 1)
    if open_state != "running":
        assert storage.update_turn_state(
            db, first.id, expected_state="running", state=open_state, content="draft"
        )
    storage.append_message(db, room, "human", "user", "meanwhile")  # the log moved on
    assert claim(db, room, token, 3, speaker="Bob") is None
    storage.update_turn_state(db, first.id, expected_state=open_state, state="stopped")
    assert claim(db, room, token, 3, speaker="Bob") is not None


def test_claim_refuses_without_a_current_lease(db: Database, room: int, clock: FakeClock) -> None:
    assert claim(db, room, 1, 1) is None  # never acquired
    token = storage.acquire_lease(db, room, "w1", 10)
    assert claim(db, room, token + 1, 1) is None  # not our token
    clock.advance(10)
    assert claim(db, room, token, 1) is None  # expired
    assert storage.latest_seq(db, room) == 1


def test_claim_refuses_when_the_room_is_not_running(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    storage.update_room(db, room, status="paused")
    assert claim(db, room, token, 1) is None
    assert claim(db, room, token, 1, statuses=None) is not None  # caller opted out


def test_claim_refuses_a_used_request_id(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    first = claim(db, room, token, 1, request_id="turn-x")
    storage.commit_turn(db, first.id, token, content="done")
    assert claim(db, room, token, 2, request_id="turn-x") is None
    assert claim(db, room, token, 2, request_id="h-1") is None


def test_claim_validation(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    with pytest.raises(StorageValueError, match="saw"):
        claim(db, room, token, 1, saw=["1"])
    with pytest.raises(StorageValueError, match="kind"):
        claim(db, room, token, 1, kind="human")
    with pytest.raises(storage.RoomNotFound):
        claim(db, 999, token, 0)


def test_commit_records_the_result(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1, data={"prompt_hash": "abc"})
    assert storage.commit_turn(
        db,
        turn.id,
        token,
        content="Here is the form @Bob",
        model="gpt-test",
        input_tokens=120,
        output_tokens=30,
        cost=0.002,
        latency=0.8,
        data={"cache_used": True},
    )
    stored = storage.get_event(db, turn.id)
    assert stored.state == "done" and stored.content == "Here is the form @Bob"
    assert (stored.input_tokens, stored.output_tokens, stored.cost, stored.latency) == (
        120,
        30,
        0.002,
        0.8,
    )
    assert stored.words == 5 and stored.model == "gpt-test"
    assert stored.data == {"prompt_hash": "abc", "cache_used": True}  # merged
    assert storage.open_turn(db, room) is None


def test_commit_with_a_stale_token_after_takeover_is_rejected(
    db: Database, room: int, clock: FakeClock
) -> None:
    old = storage.acquire_lease(db, room, "w1", 10)
    turn = claim(db, room, old, 1)
    clock.advance(11)  # w1 paused past its lease (GC pause, SIGSTOP, laptop lid)
    new = storage.acquire_lease(db, room, "w2", 10)
    assert new == old + 1
    assert not storage.commit_turn(db, turn.id, old, content="zombie write")
    assert storage.get_event(db, turn.id).state == "running"
    # The new holder resumes the same turn (same seq, same request id) and commits it.
    assert storage.commit_turn(db, turn.id, new, content="resumed answer")
    stored = storage.get_event(db, turn.id)
    assert (stored.content, stored.state, stored.seq) == ("resumed answer", "done", 2)


def test_commit_after_own_lease_expired_is_rejected_even_without_takeover(
    db: Database, room: int, clock: FakeClock
) -> None:
    token = storage.acquire_lease(db, room, "w1", 10)
    turn = claim(db, room, token, 1)
    clock.advance(10)
    assert not storage.commit_turn(db, turn.id, token, content="late")
    assert storage.get_event(db, turn.id).content == ""


def test_commit_after_release_is_rejected(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 10)
    turn = claim(db, room, token, 1)
    storage.release_lease(db, room, "w1", token)
    assert not storage.commit_turn(db, turn.id, token, content="after release")


def test_commit_checks_the_expected_state(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    assert storage.update_turn_state(db, turn.id, expected_state="running", state="stopped")
    assert not storage.commit_turn(db, turn.id, token, content="too late: stopped by a person")
    assert storage.get_event(db, turn.id).state == "stopped"


def test_commit_of_a_missing_event_is_false(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    assert storage.commit_turn(db, 424242, token, content="x") is False


def test_a_draft_waits_then_is_approved_once(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    assert storage.commit_turn(db, turn.id, token, state="waiting", content="draft reply")
    approved = storage.update_turn_state(
        db, turn.id, expected_state="waiting", state="done", content="edited reply"
    )
    assert approved is not None and approved.state == "done" and approved.content == "edited reply"
    assert approved.words == 2
    # A second tab approving the same draft changes nothing.
    assert storage.update_turn_state(db, turn.id, expected_state="waiting", state="done") is None
    assert storage.get_event(db, turn.id) == approved


def test_a_decision_bound_to_other_draft_text_is_refused(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    assert storage.commit_turn(db, turn.id, token, state="waiting", content="second draft")
    edits = storage.get_room(db, room).edits
    refused = storage.update_turn_state(
        db, turn.id, expected_state="waiting", state="done", expected_content="first draft"
    )
    assert refused is None and storage.get_event(db, turn.id).state == "waiting"
    assert storage.get_room(db, room).edits == edits  # nothing changed: nothing counted
    approved = storage.update_turn_state(
        db, turn.id, expected_state="waiting", state="done", expected_content="second draft"
    )
    assert approved is not None and approved.content == "second draft"
    assert storage.get_room(db, room).edits == edits + 1


def test_deny_sends_the_turn_back_to_running_with_the_reason(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    storage.commit_turn(db, turn.id, token, state="waiting", content="rude draft")
    denied = storage.update_turn_state(
        db,
        turn.id,
        expected_state="waiting",
        state="running",
        content="",
        data={"denials": [{"reason": "be polite", "draft": "rude draft"}]},
    )
    assert denied.state == "running" and denied.data["denials"][0]["reason"] == "be polite"
    assert storage.commit_turn(db, turn.id, token, content="polite reply", state="waiting")


def test_abandon_and_resume_an_interrupted_turn(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    storage.update_turn_state(db, turn.id, expected_state="running", state="interrupted")
    resumed = storage.update_turn_state(db, turn.id, expected_state="interrupted", state="running")
    assert resumed.state == "running"
    storage.update_turn_state(db, turn.id, expected_state="running", state="interrupted")
    abandoned = storage.update_turn_state(
        db, turn.id, expected_state=["waiting", "interrupted"], state="abandoned"
    )
    assert abandoned.state == "abandoned"


@pytest.mark.parametrize(
    ("expected", "target"),
    [("done", "running"), ("failed", "done"), ("running", "abandoned"), ("stopped", "waiting")],
)
def test_impossible_transitions_raise(db: Database, room: int, expected: str, target: str) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    with pytest.raises(InvalidTransition, match=f"from '{expected}' to '{target}'"):
        storage.update_turn_state(db, turn.id, expected_state=expected, state=target)
    with pytest.raises(InvalidTransition):
        storage.commit_turn(db, turn.id, token, state=target, expected_states=[expected])


def test_update_turn_state_can_be_fenced(db: Database, room: int, clock: FakeClock) -> None:
    token = storage.acquire_lease(db, room, "w1", 10)
    turn = claim(db, room, token, 1)
    clock.advance(11)
    assert (
        storage.update_turn_state(
            db, turn.id, expected_state="running", state="failed", token=token
        )
        is None
    )
    assert storage.update_turn_state(db, turn.id, expected_state="running", state="failed")


def test_commit_failure_with_error_document(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    error = {"type": "ModelCallError", "code": "empty_response", "message": "no text"}
    assert storage.commit_turn(db, turn.id, token, state="failed", error=error)
    assert storage.get_event(db, turn.id).error == error
    with pytest.raises(StorageValueError, match="error="):
        storage.commit_turn(db, turn.id, token, state="failed", error={"oops": 1})


def test_a_pass_is_committed_as_kind_pass(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    assert storage.commit_turn(db, turn.id, token, kind="pass", content="")
    assert storage.get_event(db, turn.id).kind == "pass"


def test_retry_budget_survives_a_restart(db_url: str, room: int, clock: FakeClock) -> None:
    first_db = Database(db_url, clock=clock)
    token = storage.acquire_lease(first_db, room, "w1", 10)
    turn = claim(first_db, room, token, 1)
    retry_at = clock.now + timedelta(seconds=4)
    error = {"type": "TimeoutError", "code": "timeout", "message": "read timed out"}
    assert storage.record_attempt(first_db, turn.id, token, error=error, next_attempt_at=retry_at)
    before = storage.get_room(first_db, room).updated_at
    clock.advance(1)
    assert storage.record_attempt(first_db, turn.id, token, error=error) == 2
    # a failed try changes what the room's pages say: the room row is bumped, so a live page
    # (which reruns when the room row changes) shows the retry or the outage
    assert storage.get_room(first_db, room).updated_at > before
    first_db.dispose()  # the worker process dies

    clock.advance(11)
    second_db = Database(db_url, clock=clock)  # a new worker process opens the database
    new_token = storage.acquire_lease(second_db, room, "w2", 10)
    resumed = storage.open_turn(second_db, room)
    assert resumed.id == turn.id and resumed.attempts == 2 and resumed.error == error
    assert storage.record_attempt(second_db, turn.id, token) is None  # old token: fenced
    assert storage.record_attempt(second_db, turn.id, new_token, next_attempt_at=retry_at) == 3
    assert storage.get_event(second_db, turn.id).next_attempt_at == retry_at
    second_db.dispose()


def test_group_commit_fences_each_item_independently(db: Database, clock: FakeClock) -> None:
    rooms = [storage.create_room(db, f"r{i}", status="running") for i in range(3)]
    tokens = [storage.acquire_lease(db, r, "w1", 10) for r in rooms]
    turns = [
        storage.claim_turn(
            db,
            r,
            token=t,
            expected_last_seq=0,
            speaker="Alice",
            request_id=f"{r}:1",
            activity=0,
            round=0,
        )
        for r, t in zip(rooms, tokens, strict=True)
    ]
    # Room 1's lease is lost to another worker; room 2's turn was stopped by a person.
    clock.advance(5)
    storage.renew_lease(db, rooms[0], "w1", tokens[0], 10)
    storage.renew_lease(db, rooms[2], "w1", tokens[2], 10)
    clock.advance(6)
    storage.acquire_lease(db, rooms[1], "w2", 10)
    storage.update_turn_state(db, turns[2].id, expected_state="running", state="stopped")
    results = storage.commit_turns(
        db,
        [
            TurnCommit(event_id=turns[0].id, token=tokens[0], content="a"),
            TurnCommit(event_id=turns[1].id, token=tokens[1], content="b"),
            TurnCommit(event_id=turns[2].id, token=tokens[2], content="c"),
            TurnCommit(event_id=turns[0].id, token=tokens[0], content="again"),  # now done
        ],
    )
    assert results == [True, False, False, False]
    assert [storage.get_event(db, t.id).content for t in turns] == ["a", "", ""]
    assert storage.commit_turns(db, []) == []


@pytest.mark.parametrize("bad", [math.nan, math.inf, {1, 2}, object()])
def test_a_claim_whose_data_is_not_plain_json_is_refused_and_writes_nothing(
    db: Database, room: int, bad: object
) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    with pytest.raises(StorageValueError, match="data must be plain JSON"):
        claim(db, room, token, 1, data={"x": bad})
    assert storage.latest_seq(db, room) == 1


def test_a_commit_whose_data_is_not_plain_json_writes_nothing_of_its_batch(
    db: Database, room: int
) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    with pytest.raises(StorageValueError, match="data must be plain JSON"):
        storage.commit_turns(
            db,
            [
                TurnCommit(event_id=turn.id, token=token, content="fine", data={"a": 1}),
                TurnCommit(event_id=turn.id, token=token, state="failed", data={"x": math.nan}),
            ],
        )
    stored = storage.get_event(db, turn.id)
    assert (stored.state, stored.content, stored.data) == ("running", "", None)


def test_a_decision_whose_data_is_not_plain_json_is_refused(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    assert storage.commit_turn(db, turn.id, token, state="waiting", content="draft")
    with pytest.raises(StorageValueError, match="data must be plain JSON"):
        storage.update_turn_state(
            db, turn.id, expected_state="waiting", state="done", data={"by": math.inf}
        )
    assert storage.get_event(db, turn.id).state == "waiting"


def test_what_a_turn_stores_reads_back_the_same(db: Database, room: int) -> None:
    """Claims and commits are bound for the driver by storage itself (each value once): what
    is read back is what was given (JSON, times, numbers, text)."""
    token = storage.acquire_lease(db, room, "w1", 30)
    data = {"why": 'é \u2060 "quoted"', "n": [1, 2.5, None, True], "nested": {"a": {}}}
    turn = claim(db, room, token, 1, saw=[1], visible_to=["Alice"], data=data)
    assert (turn.saw, turn.visible_to, turn.data) == ([1], ["Alice"], data)
    stored = storage.get_event(db, turn.id)
    assert (stored.saw, stored.visible_to, stored.data) == ([1], ["Alice"], data)
    assert stored.created_at == turn.created_at and stored.created_at.tzinfo is not None
    error = {"type": "Timeout", "code": None, "message": "slow"}
    assert storage.commit_turn(
        db, turn.id, token, state="failed", error=error, cost=0.25, data={"more": "x"}
    )
    stored = storage.get_event(db, turn.id)
    assert (stored.error, stored.cost, stored.data) == (error, 0.25, {**data, "more": "x"})


def test_invalid_batch_item_writes_nothing(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = claim(db, room, token, 1)
    with pytest.raises(StorageValueError):
        storage.commit_turns(
            db,
            [
                TurnCommit(event_id=turn.id, token=token, content="fine"),
                TurnCommit(event_id=turn.id, token=token, state="bogus"),
            ],
        )
    assert storage.get_event(db, turn.id).state == "running"
