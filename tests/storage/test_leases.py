"""Per-room leases: monotonic tokens, expiry, renew, release, the runnable-room scan."""

from __future__ import annotations

from datetime import timedelta

import pytest

import storage
from storage import Database, RoomNotFound, StorageValueError
from storage.errors import LeaseLost
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
    return storage.create_room(db, "room", status="running")


def test_first_acquire_gets_token_one_and_blocks_others(db: Database, room: int) -> None:
    assert storage.acquire_lease(db, room, "w1", 30) == 1
    assert storage.acquire_lease(db, room, "w2", 30) is None
    assert storage.acquire_lease(db, room, "w1", 30) is None  # even the holder: use renew
    lease = storage.get_lease(db, room)
    assert lease is not None and lease.owner == "w1" and lease.token == 1


def test_tokens_strictly_increase_across_release_and_expiry(
    db: Database, room: int, clock: FakeClock
) -> None:
    tokens = []
    token = storage.acquire_lease(db, room, "w1", 10)
    tokens.append(token)
    assert storage.release_lease(db, room, "w1", token)
    token = storage.acquire_lease(db, room, "w1", 10)  # same owner again: a new token
    tokens.append(token)
    clock.advance(11)
    token = storage.acquire_lease(db, room, "w2", 10)  # expired: taken over
    tokens.append(token)
    storage.release_lease(db, room, "w2", token)
    tokens.append(storage.acquire_lease(db, room, "w3", 10))
    assert tokens == [1, 2, 3, 4]
    assert storage.get_lease(db, room).token == 4


def test_a_lease_is_held_until_it_expires(db: Database, room: int, clock: FakeClock) -> None:
    storage.acquire_lease(db, room, "w1", 10)
    clock.advance(9.9)
    assert storage.acquire_lease(db, room, "w2", 10) is None
    clock.advance(0.1)  # expires_at <= now counts as expired
    assert storage.acquire_lease(db, room, "w2", 10) == 2


def test_renew_extends_only_a_current_unexpired_lease(
    db: Database, room: int, clock: FakeClock
) -> None:
    token = storage.acquire_lease(db, room, "w1", 10)
    clock.advance(8)
    assert storage.renew_lease(db, room, "w1", token, 10)
    clock.advance(8)  # 16 s after acquiring, still held thanks to the renewal
    assert storage.acquire_lease(db, room, "w2", 10) is None
    assert not storage.renew_lease(db, room, "w2", token, 10)  # wrong owner
    assert not storage.renew_lease(db, room, "w1", token + 1, 10)  # wrong token
    clock.advance(3)
    assert not storage.renew_lease(db, room, "w1", token, 10)  # expired means lost
    assert storage.lease_is_current(db, room, token) is False


def test_release_needs_the_current_owner_and_token(db: Database, room: int) -> None:
    token = storage.acquire_lease(db, room, "w1", 10)
    assert not storage.release_lease(db, room, "w2", token)
    assert not storage.release_lease(db, room, "w1", token + 1)
    assert storage.lease_is_current(db, room, token)
    assert storage.release_lease(db, room, "w1", token)
    assert not storage.lease_is_current(db, room, token)
    assert not storage.release_lease(db, room, "w1", token)  # already released


def test_require_lease_raises_lease_lost(db: Database, room: int, clock: FakeClock) -> None:
    token = storage.acquire_lease(db, room, "w1", 10)
    storage.rooms.require_lease(db, room, token)
    clock.advance(10)
    with pytest.raises(LeaseLost, match="no longer current"):
        storage.rooms.require_lease(db, room, token)


def test_lease_validation(db: Database, room: int) -> None:
    with pytest.raises(StorageValueError, match="ttl_seconds"):
        storage.acquire_lease(db, room, "w1", 0)
    with pytest.raises(StorageValueError, match="owner"):
        storage.acquire_lease(db, room, "", 10)
    with pytest.raises(RoomNotFound):
        storage.acquire_lease(db, 999, "w1", 10)


def test_runnable_rooms_are_running_with_a_free_or_expired_lease(
    db: Database, clock: FakeClock
) -> None:
    idle = storage.create_room(db, "idle")
    free = storage.create_room(db, "free", status="running")
    clock.advance(1)
    leased = storage.create_room(db, "leased", status="running")
    released = storage.create_room(db, "released", status="running")
    expired = storage.create_room(db, "expired", status="running")
    storage.acquire_lease(db, leased, "w", 100)
    storage.release_lease(db, released, "w", storage.acquire_lease(db, released, "w", 100))
    storage.acquire_lease(db, expired, "w", 5)
    clock.advance(6)
    runnable = storage.list_runnable_rooms(db)
    assert set(runnable) == {free, released, expired}
    assert idle not in runnable and leased not in runnable
    assert runnable[0] == free  # least recently touched first
    assert storage.list_runnable_rooms(db, limit=1) == [free]
    # With an explicit time, the leased room becomes runnable once its lease is over.
    later = clock.now + timedelta(seconds=200)
    assert leased in storage.list_runnable_rooms(db, now=later)


def test_many_leases_are_taken_and_renewed_in_one_write_like_one_at_a_time(
    db: Database, clock: FakeClock
) -> None:
    rooms = [storage.create_room(db, f"r{i}", status="running") for i in range(4)]
    assert storage.acquire_lease(db, rooms[1], "w1", 10) == 1  # held by someone else
    storage.acquire_lease(db, rooms[2], "w1", 10)
    clock.advance(11)  # rooms[2]'s lease expired: free to take, with the next token
    storage.acquire_lease(db, rooms[1], "w1", 10)  # held again (token 2)
    taken = storage.acquire_leases(db, [*reversed(rooms), 999_999], "w2", 10)
    assert taken == {rooms[0]: 1, rooms[2]: 2, rooms[3]: 1}  # a missing room is left out
    assert storage.acquire_leases(db, rooms, "w3", 10) == {}
    clock.advance(5)
    assert storage.renew_leases(db, taken, "w2", 10) == set()
    clock.advance(9)  # 14 s after taking, 9 s after renewing: still held
    assert storage.acquire_leases(db, rooms, "w3", 10) == {rooms[1]: 3}
    wrong = {rooms[0]: taken[rooms[0]], rooms[2]: taken[rooms[2]] + 5, rooms[1]: 2}
    assert storage.renew_leases(db, wrong, "w2", 10) == {rooms[2], rooms[1]}
    clock.advance(11)
    assert storage.renew_leases(db, {rooms[0]: taken[rooms[0]]}, "w2", 10) == {rooms[0]}
    assert storage.acquire_leases(db, [], "w2", 10) == {}
