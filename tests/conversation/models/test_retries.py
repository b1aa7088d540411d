"""The one backoff formula (``Backoff``) and the in-process retry loop built on tenacity: every
wait between tries of a model call is ``Backoff.delay``, with the numbers of its kind of wait."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conversation.models.call_rules import ModelTimeoutError
from conversation.models.retries import (
    OUTAGE_WAIT,
    RATE_PAUSE,
    TRANSIENT_HTTP_STATUSES,
    Backoff,
    async_call_with_retries,
)


class HTTPError(Exception):
    def __init__(self, status: int, retry_after: str | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.response = type(
            "R", (), {"headers": {"retry-after": retry_after} if retry_after else {}}
        )()


@pytest.mark.parametrize(
    ("backoff", "delays"),
    [
        (Backoff(first=1.0), [1, 2, 4, 8, 16, 32, 60, 60]),
        (Backoff(first=0.0), [0] * 8),
        (Backoff(first=2.5, factor=1.0), [2.5] * 8),
        (OUTAGE_WAIT, [2, 4, 8, 16, 30, 30, 30, 30]),
        (RATE_PAUSE, [1, 2, 4, 8, 16, 32, 60, 60]),
    ],
)
def test_the_formula(backoff: Backoff, delays: list[float]) -> None:
    assert [backoff.delay(tries) for tries in range(1, 9)] == delays


def test_retry_after_and_a_timeout_floor_win() -> None:
    assert Backoff(first=1.0).delay(3, HTTPError(429, retry_after="7")) == 7
    assert OUTAGE_WAIT.delay(1, HTTPError(503, retry_after="3600")) == 60  # capped
    slow = ModelTimeoutError("slow", timeout=30, min_backoff=30)
    assert [Backoff(first=1.0).delay(n, slow) for n in (1, 2, 3, 6)] == [30, 60, 120, 900]
    assert Backoff(first=0.0).delay(1, slow) == 30


def test_the_loop_waits_by_the_formula_and_not_after_the_last_try(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sleeps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    failures: list[Exception] = [HTTPError(503), HTTPError(429, retry_after="5"), HTTPError(503)]
    calls = []

    async def call() -> str:
        calls.append(1)
        raise failures.pop(0)

    with pytest.raises(HTTPError) as caught:
        asyncio.run(
            async_call_with_retries(
                call,
                max_attempts=3,
                delay=1.0,
                describe="turn 2",
                statuses=TRANSIENT_HTTP_STATUSES,
                exponential=True,
            )
        )
    assert len(calls) == 3 and sleeps == [1.0, 5.0]
    assert caught.value.__notes__ == ["while turn 2 (attempt 3)"]


def test_a_failure_that_is_not_transient_is_raised_at_once() -> None:
    calls: list[Any] = []

    async def call() -> str:
        calls.append(1)
        raise HTTPError(400)

    with pytest.raises(HTTPError) as caught:
        asyncio.run(async_call_with_retries(call, max_attempts=5, delay=0, describe="turn 1"))
    assert len(calls) == 1 and caught.value.__notes__ == ["while turn 1 (attempt 1)"]
