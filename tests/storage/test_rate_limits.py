"""The rate limiter's buckets (storage.models.rate_limits): refill, debt, pause, and the shared row."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import storage
from storage import Database, RateLimit
from tests.support.clocks import FakeClock


@pytest.fixture
def clocked(db_url: str) -> Iterator[tuple[Database, FakeClock]]:
    clock = FakeClock()
    database = Database(db_url, clock=clock)
    yield database, clock
    database.dispose()


def test_a_full_bucket_gives_its_burst_then_refills_at_the_rate(
    clocked: tuple[Database, FakeClock],
) -> None:
    db, clock = clocked
    limit = RateLimit(rpm=120, burst_seconds=2)  # 2 a second, 4 at once
    assert [storage.take_rate(db, "p", limit) for _ in range(4)] == [0.0] * 4
    assert storage.take_rate(db, "p", limit) == pytest.approx(0.5)
    clock.advance(0.5)
    assert storage.take_rate(db, "p", limit) == 0.0
    assert storage.take_rate(db, "p", limit) == pytest.approx(0.5)


def test_tokens_are_limited_and_a_large_request_leaves_a_debt(
    clocked: tuple[Database, FakeClock],
) -> None:
    db, clock = clocked
    limit = RateLimit(tpm=6000)  # 100 tokens a second, a burst of 100
    assert storage.take_rate(db, "t", limit, tokens=400) == 0.0  # full: let through, in debt
    assert storage.take_rate(db, "t", limit, tokens=50) == pytest.approx(3.5)
    clock.advance(3.5)
    assert storage.take_rate(db, "t", limit, tokens=50) == 0.0
    storage.give_back_rate(db, "t", limit, tokens=1000)  # never above the capacity
    [state] = storage.rate_buckets(db)
    assert state.tokens == pytest.approx(100) and state.tpm == 6000


def test_a_pause_stops_every_taker_and_the_bucket_restarts_empty(
    clocked: tuple[Database, FakeClock],
) -> None:
    db, clock = clocked
    limit = RateLimit(rpm=60)
    assert storage.take_rate(db, "k", limit) == 0.0
    until = storage.pause_rate(db, "k", limit, 5)
    assert storage.pause_rate(db, "k", limit, 1) == until  # a longer pause already set is kept
    assert storage.take_rate(db, "k", limit) == pytest.approx(5.0)
    clock.advance(5)
    assert storage.take_rate(db, "k", limit) == pytest.approx(1.0)  # empty: refills at the rate
    clock.advance(1)
    assert storage.take_rate(db, "k", limit) == 0.0


def test_bad_values_are_refused() -> None:
    with pytest.raises(storage.StorageValueError, match="rpm"):
        RateLimit(rpm=0)
    with pytest.raises(storage.StorageValueError, match="burst_seconds"):
        RateLimit(rpm=1, burst_seconds=0)
