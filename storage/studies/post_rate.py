"""A participant's posting rate: counted in the same write transaction as the post it allows
(``append_message``'s ``charge``), so a refused post writes and counts nothing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select as sa_select

from storage.database import Database
from storage.errors import ParticipantNotFound, RateLimited
from storage.studies._columns import PEOPLE


@dataclass(frozen=True, slots=True)
class PostRate:
    """A post counted in the participant's rate window (``limit`` posts per ``window`` seconds,
    ``now`` in ``time.time()`` seconds); ``seen_at``: the post also proves they are here
    (``last_seen_at``), in the same write. Called with a write connection (``append_message``'s
    ``charge``): counts the post, or raises :class:`RateLimited` having written nothing."""

    participant_id: int
    now: float
    window: float
    limit: int
    seen_at: datetime | None = None

    def __call__(self, conn: Any) -> None:
        people = PEOPLE
        mine = people.c.id == self.participant_id
        row = conn.execute(sa_select(people.c.posts).where(mine).with_for_update()).first()
        if row is None:
            raise ParticipantNotFound(f"participant {self.participant_id} does not exist")
        recent = [t for t in (row.posts or []) if self.now - t < self.window]
        if len(recent) >= self.limit:
            raise RateLimited(max(0.01, self.window - (self.now - min(recent))))
        values: dict[str, Any] = {"posts": [*recent, self.now]}
        if self.seen_at is not None:
            values["last_seen_at"] = self.seen_at
        conn.execute(people.update().where(mine).values(**values))


def note_post(
    db: Database,
    participant_id: int,
    *,
    now: float,
    window: float,
    limit: int,
    seen_at: datetime | None = None,
) -> float:
    """Count a post in the participant's rate window: 0 when it is allowed (and counted), else
    the seconds until it would be (see :class:`PostRate`; a message to a room passes its
    ``PostRate`` to ``append_message`` instead, one write for both)."""
    try:
        with db.write_connection() as conn:
            PostRate(participant_id, now, window, limit, seen_at)(conn)
    except RateLimited as limited:
        return limited.wait
    return 0.0


__all__ = ["PostRate", "note_post"]
