"""Partial drafts (storage.rooms.drafts): fenced writes, readers that see only a live writer's text,
stop requests, and the commit that removes them."""

from __future__ import annotations

import pytest

import storage
from storage import Database, TurnCommit
from tests.support.clocks import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db(db_url: str, clock: FakeClock):
    with Database(db_url, clock=clock) as database:
        yield database


@pytest.fixture
def running(db: Database) -> tuple[int, int, int]:
    """(room, token, turn): a room whose worker holds the lease and a running turn."""
    room = storage.create_room(db, "room", {"moderated": False}, status="running")
    storage.append_message(db, room, "human", "user", "hello", request_id="h-1")
    token = storage.acquire_lease(db, room, "w1", 30)
    turn = storage.claim_turn(
        db,
        room,
        token=token,
        expected_last_seq=1,
        speaker="Alice",
        request_id="t-2",
        activity=1,
        round=0,
    )
    assert turn is not None and turn.id is not None
    return room, token, turn.id


def test_a_written_draft_is_read_while_its_turn_runs_and_never_in_the_log(db, running) -> None:
    room, token, turn = running
    assert storage.start_draft(db, turn, token) == storage.rooms.DraftWrite(True, None)
    assert storage.partial_draft(db, turn) is None  # no text yet
    for text in ("Hello", "Hello there", "Hello there, Bob"):
        assert storage.write_draft(db, turn, token, text).applied
    draft = storage.partial_draft(db, turn)
    assert draft is not None
    assert (draft.text, draft.writes, draft.speaker, draft.room_id) == (
        "Hello there, Bob",
        3,
        "Alice",
        room,
    )
    assert storage.room_draft(db, room) == draft
    # the log has the running turn with no content: a draft is never a message
    [_, event] = storage.events(db, room)
    assert (event.state, event.content) == ("running", "")


def test_a_draft_is_bounded(db, running) -> None:
    _, token, turn = running
    storage.write_draft(db, turn, token, "x" * (storage.MAX_DRAFT_CHARS + 500))
    draft = storage.partial_draft(db, turn)
    assert draft is not None and len(draft.text) == storage.MAX_DRAFT_CHARS
    with pytest.raises(storage.StorageValueError):
        storage.write_draft(db, turn, token, 42)  # type: ignore[arg-type]


def test_a_writer_without_the_lease_is_fenced_out(db, running) -> None:
    _, token, turn = running
    assert not storage.write_draft(db, turn, token + 1, "zombie").applied
    assert not storage.start_draft(db, turn, token + 1).applied
    assert storage.partial_draft(db, turn) is None


def test_a_dead_writers_draft_reads_as_none_and_is_discarded_with_a_record(
    db, running, clock
) -> None:
    room, token, turn = running
    storage.start_draft(db, turn, token)
    storage.write_draft(db, turn, token, "half a sent")
    clock.advance(31)  # the writer died: its lease ran out
    assert storage.partial_draft(db, turn) is None
    token2 = storage.acquire_lease(db, room, "w2", 30)
    assert storage.start_draft(db, turn, token2).applied
    event = storage.get_event(db, turn)
    [record] = event.data["discarded_drafts"]
    assert (record["chars"], record["writes"], record["why"]) == (11, 1, "crash or lost lease")
    assert storage.partial_draft(db, turn) is None  # the old text is gone
    storage.write_draft(db, turn, token2, "A new")
    assert storage.partial_draft(db, turn).text == "A new"


def test_a_stop_request_reaches_the_writer_and_names_who(db, running) -> None:
    _, token, turn = running
    storage.start_draft(db, turn, token)
    storage.write_draft(db, turn, token, "Hello")
    assert storage.request_stop(db, turn, "mod@lab")
    assert storage.request_stop(db, turn, "second")  # the first name is kept
    assert storage.write_draft(db, turn, token, "Hello there").stop_by == "mod@lab"
    assert storage.write_draft(db, turn, token, None) == storage.rooms.DraftWrite(True, "mod@lab")
    assert storage.stop_requested(db, turn) == "mod@lab"
    with pytest.raises(storage.StorageValueError):
        storage.request_stop(db, turn, "")


def test_a_stop_requested_before_the_call_starts_is_kept(db, running) -> None:
    _, token, turn = running
    assert storage.request_stop(db, turn, "mod")
    assert storage.start_draft(db, turn, token).stop_by == "mod"


def test_the_commit_removes_the_draft_and_the_stop_request(db, running) -> None:
    room, token, turn = running
    storage.write_draft(db, turn, token, "Hello")
    storage.request_stop(db, turn, "mod")
    [ok] = storage.commit_turns(
        db, [TurnCommit(event_id=turn, token=token, state="running", content="")]
    )
    assert ok
    assert storage.stop_requested(db, turn) is None
    assert storage.partial_draft(db, turn) is None
    assert not storage.request_stop(db, turn, "late") or True  # still running: allowed
    [ok] = storage.commit_turns(
        db, [TurnCommit(event_id=turn, token=token, state="done", content="Hi")]
    )
    assert ok and not storage.request_stop(db, turn, "too late")  # done: nothing to stop


def test_deleting_the_room_removes_its_drafts(db, running) -> None:
    room, token, turn = running
    storage.write_draft(db, turn, token, "Hello")
    storage.release_lease(db, room, "w1", token)
    assert storage.delete_room(db, room)
    assert storage.stop_requested(db, turn) is None
