"""Is a room (or an experiment) recovering after a crash? What the Room and Experiments pages say
while a restarted server takes over turns its dead predecessor left in flight.

A turn in flight (state ``running``) is *recovering* when no live process drives it: its lease was
released or has expired, or its holder is a process of this host that is gone (``kill -9``; see
``conversation.worker.takeover``). Such a turn is taken over by the next runner's scan, in seconds,
and resumes as usual. A holder on another host is judged by its lease only (its process table is
not ours), so it shows as recovering once its lease has expired.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import storage
from conversation.worker.runner import TAKEOVER_SECONDS
from conversation.worker.takeover import gone_owners

#: How long a runner takes at most to notice and claim a turn whose holder is gone (its takeover
#: scan runs every ``TAKEOVER_SECONDS``; the claim follows in the same pass).
TAKEOVER_WITHIN_SECONDS = round(TAKEOVER_SECONDS)


@dataclass(frozen=True, slots=True)
class Recovery:
    """Turns in flight that lost their process: how many rooms, and the longest wait left."""

    rooms: int
    within_seconds: int

    def sentence(self, subject: str = "") -> str:
        """``recovering after a restart: ... taken over within about 5 s`` (``subject``: whose
        turn, for one room's page; else the count of rooms)."""
        if subject or self.rooms == 1:
            what = (subject or "1 room's turn") + " lost its process and is"
        else:
            what = f"{self.rooms} rooms' turns lost their process and are"
        return f"recovering after a restart: {what} taken over within about {self.within_seconds} s"


def _aware(moment: Any) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def recovering(
    db: Any, *, room_id: int | None = None, experiment_id: int | None = None
) -> Recovery | None:
    """The turns in flight of one room (``room_id``) or an experiment whose process is gone, or
    None when every turn in flight has a live holder (or none is in flight)."""
    rows = storage.in_flight_leases(db, room_id=room_id, experiment_id=experiment_id)
    if not rows:
        return None
    now = datetime.now(UTC)
    held = {owner: _aware(since) for _, owner, expires, since in rows if owner}
    gone = set(gone_owners(held))
    waits = []
    for _, owner, expires, _since in rows:
        expires = _aware(expires)
        if owner is None or expires is None or expires <= now or owner in gone:
            waits.append(TAKEOVER_WITHIN_SECONDS)
    if not waits:
        return None
    return Recovery(rooms=len(waits), within_seconds=max(waits))


__all__ = ["TAKEOVER_WITHIN_SECONDS", "Recovery", "recovering"]
