"""Batch storage for workers driving many rooms: reads, claims, settlements and releases, each
item checked exactly as the single-room functions check it."""

from __future__ import annotations

import pytest

import storage
from storage import Database, RoomSettlement, TurnClaim
from tests.support.clocks import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db(db_url: str, clock: FakeClock):
    with Database(db_url, clock=clock) as database:
        yield database


def running_room(db: Database, name: str) -> tuple[int, int]:
    room_id = storage.create_room(db, name, {}, status="running")
    storage.append_message(db, room_id, "human", "user", "go", request_id="h")
    token = storage.acquire_lease(db, room_id, "w", 30)
    assert token is not None
    return room_id, token


def claim(
    room_id: int, token: int, last: int = 1, speaker: str = "Ann", rid: str = "t"
) -> TurnClaim:
    return TurnClaim(
        room_id=room_id,
        token=token,
        expected_last_seq=last,
        speaker=speaker,
        request_id=rid,
        activity=1,
        round=0,
    )


def test_each_claim_is_checked_on_its_own(db: Database, clock: FakeClock) -> None:
    good, good_token = running_room(db, "good")
    stale_seq, stale_token = running_room(db, "moved")
    storage.append_message(db, stale_seq, "human", "user", "another", request_id="h2")
    wrong_token, token = running_room(db, "fenced")
    used, used_token = running_room(db, "used")
    storage.append_message(db, used, "system", "room", "note", request_id="t")
    results = storage.claim_turns(
        db,
        [
            claim(good, good_token),
            claim(stale_seq, stale_token),  # the log moved: last seq is 2 now
            claim(wrong_token, token + 1),  # not the current lease
            claim(used, used_token, last=2),  # request id already in the log
            claim(9_999, 1),  # no such room
        ],
    )
    assert results[0] is not None and (results[0].seq, results[0].state) == (2, "running")
    assert results[1:] == [None, None, None, None]
    assert [e.seq for e in storage.events(db, good)] == [1, 2]
    assert [e.seq for e in storage.events(db, stale_seq)] == [1, 2]  # nothing added


def test_a_second_claim_for_the_same_room_in_one_batch_is_refused(db: Database) -> None:
    room_id, token = running_room(db, "twice")
    first, second = storage.claim_turns(
        db, [claim(room_id, token, rid="a"), claim(room_id, token, speaker="Ben", rid="b")]
    )
    assert first is not None and second is None
    assert [e.speaker for e in storage.events(db, room_id)] == ["user", "Ann"]


def test_an_expired_lease_cannot_claim(db: Database, clock: FakeClock) -> None:
    room_id, token = running_room(db, "late")
    clock.advance(31)
    assert storage.claim_turns(db, [claim(room_id, token)]) == [None]


def test_claims_match_the_single_room_function(db: Database) -> None:
    a, token_a = running_room(db, "a")
    b, token_b = running_room(db, "b")
    batched = storage.claim_turns(db, [claim(a, token_a)])[0]
    single = storage.claim_turn(
        db,
        b,
        token=token_b,
        expected_last_seq=1,
        speaker="Ann",
        request_id="t",
        activity=1,
        round=0,
    )
    assert batched is not None and single is not None
    keep = ("seq", "kind", "speaker", "state", "request_id", "activity", "round", "attempts")
    assert {k: getattr(batched, k) for k in keep} == {k: getattr(single, k) for k in keep}


def test_room_logs_reads_many_rooms_and_only_new_events(db: Database) -> None:
    a, _ = running_room(db, "a")
    b, _ = running_room(db, "b")
    storage.append_message(db, b, "human", "user", "more", request_id="m")
    logs = storage.room_logs(db, [a, b, 12345])
    assert set(logs) == {a, b}
    assert [e.seq for e in logs[b][1]] == [1, 2]
    newer = storage.room_logs(db, [a, b], after_seq={b: 1})
    assert [e.seq for e in newer[b][1]] == [2]
    assert [e.seq for e in newer[a][1]] == [1]  # not named: read whole


def test_settlements_are_fenced_and_carry_their_notice(db: Database, clock: FakeClock) -> None:
    held, token = running_room(db, "held")
    lost, lost_token = running_room(db, "lost")
    storage.release_leases(db, "w", {lost: lost_token})
    applied = storage.settle_rooms(
        db,
        [
            RoomSettlement(
                room_id=held,
                token=token,
                status="terminated",
                stop_reason="done",
                notice="Stopped: done",
                notice_data={"event": "terminated"},
            ),
            RoomSettlement(room_id=lost, token=lost_token, status="settled"),
        ],
    )
    assert applied == [True, False]
    assert storage.get_room(db, held).status == "terminated"
    assert storage.events(db, held)[-1].content == "Stopped: done"
    assert storage.get_room(db, lost).status == "running"
    assert storage.acquire_lease(db, lost, "other", 30) is not None  # released for others


def test_a_settlement_is_refused_when_the_log_grew_after_its_plan(db: Database) -> None:
    room_id, token = running_room(db, "grew")
    storage.append_message(db, room_id, "human", "user", "one more", request_id="late")
    stale, fresh = storage.settle_rooms(
        db,
        [
            RoomSettlement(room_id=room_id, token=token, status="settled", expected_last_seq=1),
            RoomSettlement(room_id=room_id, token=token, status="settled", expected_last_seq=2),
        ],
    )
    assert (stale, fresh) == (False, True)
    assert storage.get_room(db, room_id).status == "settled"


def test_releasing_many_leases_frees_only_those_still_held_with_their_token(db: Database) -> None:
    mine, mine_token = running_room(db, "mine")
    other, other_token = running_room(db, "other")
    again, _ = running_room(db, "again")
    storage.release_leases(db, "w", {again: 99})  # not its token: left alone
    storage.release_leases(db, "someone else", {other: other_token})  # not its owner
    assert storage.get_lease(db, other).owner == "w"
    storage.release_leases(db, "w", {mine: mine_token, other: other_token})
    assert storage.get_lease(db, mine).owner is None
    assert storage.get_lease(db, other).owner is None
    assert storage.get_lease(db, again).owner == "w"


def test_id_lists_of_any_length_and_integer_kind_find_exactly_their_rooms(db: Database) -> None:
    """An id list is one parameter whatever its length (SQLite: a JSON array read with
    ``json_each``; PostgreSQL: an array): none, one, and more than SQLite's old parameter limit
    find exactly the rooms asked for; numpy integers (ids read from a frame) work as ints."""
    import numpy as np

    rooms = [running_room(db, f"r{i}")[0] for i in range(3)]
    assert storage.room_logs(db, []) == {}
    assert set(storage.room_logs(db, [rooms[1]])) == {rooms[1]}
    many = [*rooms, *range(100_000, 140_000)]  # 40,003 ids, only three exist
    assert set(storage.room_logs(db, many)) == set(rooms)
    taken = storage.acquire_leases(db, [np.int64(r) for r in rooms], "other", 30)
    assert taken == {}  # each room is leased by "w" already: none taken, no error
    keys = ["k" * 64, "missing"]
    storage.store_cached_responses(db, {keys[0]: {"model": "m", "answer": 1}})
    assert set(storage.cached_responses(db, [*keys, *(f"x{i}" for i in range(2000))])) == {keys[0]}
