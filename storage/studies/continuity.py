"""A service's continuity: "up since when", from its processes' beats (``service_beats``).

Every app process says "up" every second (:func:`beat`). A beat after a gap longer than the
caller's ``gap`` (the process was killed, the machine slept, the database was unreachable and
the beats failed), or the first beat of a process that has just started, starts a new period:
``up_since`` is that beat's time. :func:`continuity` reads it back. The study clock judges a
participant's absence only while the service is up (its last beat within ``gap``), and only
since ``up_since``: time the service was down is never absence.

Beats are not made durable (a beat lost with a power cut is a gap, which only grants grace).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite

from storage.database import Database
from storage.errors import StorageValueError
from storage.tables import ServiceBeat

BEATS = ServiceBeat.__table__  # type: ignore[attr-defined]
#: The service participants' pages are served by.
PARTICIPANTS_SERVICE = "participants"


@dataclass(frozen=True, slots=True)
class ServiceContinuity:
    """A service's last beat and the start of its current period without a gap."""

    up_since: datetime
    beat_at: datetime

    def is_up(self, now: datetime, gap: float) -> bool:
        """Whether the service was heard from within ``gap`` seconds of ``now``."""
        return now - self.beat_at <= timedelta(seconds=gap)


def beat_service(
    db: Database,
    *,
    gap: float,
    restarted: bool = False,
    owner: str | None = None,
    name: str = PARTICIPANTS_SERVICE,
) -> ServiceContinuity:
    """Say the service is up now, in one write; its continuity after the beat. A new period
    starts (``up_since`` = now) when there is no beat yet, the last one is older than ``gap``
    seconds, or ``restarted`` (this process's first beat, or its first since a failed one)."""
    if not gap > 0:
        raise StorageValueError(f"gap={gap!r} must be > 0 seconds")
    now = db.now()
    with db.write_connection(durable=False) as conn:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        conn.execute(
            dialect.insert(BEATS)
            .values(name=name, up_since=now, beat_at=now, owner=owner)
            .on_conflict_do_nothing()
        )
        query = select(BEATS.c.up_since, BEATS.c.beat_at).where(BEATS.c.name == name)
        if conn.dialect.name == "postgresql":
            query = query.with_for_update()
        up_since, beat_at = conn.execute(query).one()
        if restarted or now - beat_at > timedelta(seconds=gap):
            up_since = now
        conn.execute(
            update(BEATS)
            .where(BEATS.c.name == name)
            .values(up_since=up_since, beat_at=max(now, beat_at), owner=owner)
        )
    return ServiceContinuity(up_since, max(now, beat_at))


def service_continuity(db: Database, name: str = PARTICIPANTS_SERVICE) -> ServiceContinuity | None:
    """The service's continuity as stored (None: it never beat)."""
    with db.read_connection() as conn:
        row = conn.execute(
            select(BEATS.c.up_since, BEATS.c.beat_at).where(BEATS.c.name == name)
        ).first()
    return None if row is None else ServiceContinuity(row.up_since, row.beat_at)


__all__ = ["PARTICIPANTS_SERVICE", "ServiceContinuity", "beat_service", "service_continuity"]
