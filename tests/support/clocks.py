"""Clocks for tests that make leases expire, and paced or retried calls wait, without waiting."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

_real_sleep = asyncio.sleep


class FakeClock:
    """A frozen clock that moves only when told (``advance``)."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class OffsetClock:
    """Real time plus an offset a test moves on (so a lease held in real time expires)."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


class SleepClock:
    """A ``perf_counter`` / ``monotonic`` clock that moves only when code awaits ``sleep``: install
    ``clock.sleep`` as ``asyncio.sleep`` and ``clock`` as the module's clock. Each sleep is
    recorded (``sleeps``), moves the clock on by its delay and yields to the loop once, so paced
    or retried code runs at once, on any machine, and its pace can be read exactly."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, delay: float, result: object = None) -> object:
        self.sleeps.append(delay)
        self.now += max(delay, 0.0)
        await _real_sleep(0)
        return result


class Seen:
    """A module (``asyncio``, ``time``) as one module sees it: the given names replaced, every
    other name the real module's. Installed with ``monkeypatch.setattr(module, "time", ...)``."""

    def __init__(self, real: ModuleType, **replaced: Any) -> None:
        self._real = real
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def recorded_sleeps(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> list[float]:
    """The delays ``module`` asks ``asyncio.sleep`` for, in order, each returned at once (after
    yielding to the loop): a test reads the waits a module chose (a backoff, a Retry-After)
    without spending them, and other modules' sleeps are left alone."""
    waits: list[float] = []

    async def sleep(delay: float, result: object = None) -> object:
        waits.append(delay)
        await _real_sleep(0)
        return result

    monkeypatch.setattr(module, "asyncio", Seen(asyncio, sleep=sleep))
    return waits
