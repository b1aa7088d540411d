"""A participant's posting rate: the one database token bucket (``storage.rate_limits``, the
one the model calls use) under the participant's own key, charged in the same write transaction
as the post it allows (``append_message``'s ``charge``), so a refused post writes and counts
nothing.

``limit`` posts per ``window`` seconds is a bucket of ``limit`` posts that refills at
``limit / window`` posts a second: at most ``limit`` in a burst, and the same average.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.engine import Connection

from storage.database import Database
from storage.errors import ParticipantNotFound, RateLimited, StorageValueError
from storage.models.rate_limits import RateLimit, take_rate_on
from storage.studies._columns import PEOPLE


def rate_key(participant_id: int) -> str:
    """The bucket of a participant's posts (and help messages)."""
    return f"study-participant:{int(participant_id)}"


@dataclass(frozen=True, slots=True)
class PostRate:
    """A post taken, at ``at``, from the participant's bucket (``limit`` posts per ``window``
    seconds); with ``seen``, the post also proves they are here (``last_seen_at = at``), in the
    same write. Called with a write connection (``append_message``'s ``charge``): takes the
    post, or raises :class:`RateLimited` (the caller's transaction then writes nothing)."""

    participant_id: int
    window: float
    limit: int
    at: datetime
    seen: bool = True

    def __post_init__(self) -> None:
        if not (self.window > 0 and self.limit >= 1):
            raise StorageValueError(
                f"a posting rate needs limit >= 1 and window > 0, got {self.limit}/{self.window}"
            )

    def __call__(self, conn: Connection) -> None:
        mine = PEOPLE.c.id == self.participant_id
        if conn.execute(select(PEOPLE.c.id).where(mine)).first() is None:
            raise ParticipantNotFound(f"participant {self.participant_id} does not exist")
        rate = RateLimit(rpm=self.limit * 60.0 / self.window, burst_seconds=self.window)
        wait = take_rate_on(conn, rate_key(self.participant_id), rate, self.at)
        if wait > 0:
            raise RateLimited(wait)
        if self.seen:
            conn.execute(PEOPLE.update().where(mine).values(last_seen_at=self.at))


def note_post(db: Database, participant_id: int, *, window: float, limit: int) -> float:
    """Take a post (a help message) from the participant's bucket: 0 when it is allowed (and
    taken), else the seconds until it would be (see :class:`PostRate`; a message to a room
    passes its ``PostRate`` to ``append_message`` instead, one write for both)."""
    charge = PostRate(participant_id, window, limit, db.now(), seen=True)
    try:
        with db.write_connection() as conn:
            charge(conn)
    except RateLimited as limited:
        return limited.wait
    return 0.0


__all__ = ["PostRate", "note_post", "rate_key"]
