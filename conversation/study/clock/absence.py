"""Absence, judged fairly: only while the participants' service is up, and only since it came
back (docs/studies.md, "The outage rule").

Every app process says "the participants' service is up" every :data:`BEAT_SECONDS`
(:func:`note_service_up`, from ``conversation.worker.studies.ServiceBeat``). A silence longer
than :data:`GAP_SECONDS` is an outage (the app was killed, the database was unreachable so the
beats failed); the first beat after it starts a new period, ``up_since``. Then:

- while the service is not up (no beat within the gap), nobody is judged absent: their pages
  cannot reach it;
- a person's absence counts from the later of their last sign of life (a heartbeat, a post) and
  ``up_since``: a person who stayed is given the whole absence limit again to reconnect.

With no beat ever recorded (a script driving the library, a worker on its own) there is no
service to be fair to: absence counts from the last sign of life alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import storage
from conversation.boundary import translated

#: How often an app process says the participants' service is up.
BEAT_SECONDS = 1.0
#: The longest silence of the service that is not an outage yet.
GAP_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Absence:
    """The absence rule at ``now``: ``service`` is the participants' service's continuity as
    stored (None: it never beat), ``limit`` the study's absence limit."""

    service: storage.ServiceContinuity | None
    now: datetime
    limit: timedelta

    @property
    def judging(self) -> bool:
        """Whether anyone may be judged absent now (the service is up, or never beat)."""
        return self.service is None or self.service.is_up(self.now, GAP_SECONDS)

    def since(self, moment: datetime) -> datetime:
        """``moment``, or the start of the service's current period when that is later: what
        happened while it was down does not count against anyone."""
        if self.service is None:
            return moment
        return max(moment, self.service.up_since)

    def away(self, last_seen: datetime) -> float | None:
        """Seconds away that count (None: nobody is judged now)."""
        if not self.judging:
            return None
        return max(0.0, (self.now - self.since(last_seen)).total_seconds())

    def gone(self, last_seen: datetime) -> bool:
        """Away past the limit, while the service was up."""
        away = self.away(last_seen)
        return away is not None and away > self.limit.total_seconds()


def absence_now(db: storage.Database, limit_seconds: float, now: datetime) -> Absence:
    """The absence rule at ``now`` for a study whose limit is ``limit_seconds``."""
    with translated():
        service = storage.service_continuity(db)
    return Absence(service, now, timedelta(seconds=limit_seconds))


def note_service_up(db: storage.Database, *, restarted: bool, owner: str | None = None) -> None:
    """Say the participants' service is up (an app process, every :data:`BEAT_SECONDS`);
    ``restarted``: this process's first beat, or its first since a beat failed, starts a new
    period. ``StorageUnavailableError`` when the database cannot be reached."""
    with translated():
        storage.beat_service(db, gap=GAP_SECONDS, restarted=restarted, owner=owner)


__all__ = ["BEAT_SECONDS", "GAP_SECONDS", "Absence", "absence_now", "note_service_up"]
