"""Clocks for tests that make leases expire without waiting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


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
