"""Per-room leases with fencing tokens (DESIGN decision 2).

A worker drives a room only while it holds the room's lease. Each acquisition hands out a token one
greater than any token ever issued for that room (the lease row is never deleted, so a released or
expired lease keeps its last token). Every write a worker makes on behalf of a room is *fenced*: it
is applied only if the room's lease still carries that token and has not expired, so a worker that
was paused past its lease (a "zombie") can never write, even if nobody else has taken over yet.

Expiry is judged by ``db.clock()`` of the process doing the write. On PostgreSQL with several
machines, keep clocks synchronised (NTP) and TTLs far above the skew (tens of seconds).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlmodel import Session

from ._tx import lock_room
from .database import Database
from .errors import LeaseLost, StorageValueError
from .tables import Lease

log = logging.getLogger(__name__)


def _check(owner: str, ttl_seconds: float | None = None) -> None:
    if not isinstance(owner, str) or not owner:
        raise StorageValueError(
            f"owner={owner!r} must be a non-empty string (e.g. 'host:pid:uuid')"
        )
    if ttl_seconds is not None and not ttl_seconds > 0:
        raise StorageValueError(f"ttl_seconds={ttl_seconds!r} must be > 0")


def holds_lease(session: Session, room_id: int, token: int, now: datetime) -> bool:
    """Inside a write transaction: whether ``token`` is the room's current, unexpired lease."""
    lease = session.get(Lease, room_id)
    return (
        lease is not None
        and lease.owner is not None
        and lease.token == token
        and lease.expires_at is not None
        and lease.expires_at > now
    )


def acquire_lease(db: Database, room_id: int, owner: str, ttl_seconds: float) -> int | None:
    """Take the room's lease for ``ttl_seconds``; return the new fencing token, or ``None``.

    Succeeds when the lease is free (never taken, released) or expired; returns ``None`` while
    anyone, including ``owner`` itself, holds an unexpired lease (use :func:`renew_lease` to
    extend your own). The token is strictly greater than every token issued before for this room.
    Raises :class:`~storage.errors.RoomNotFound`.
    """
    _check(owner, ttl_seconds)
    now = db.now()
    with db.write() as session:
        lock_room(session, room_id)
        lease = session.get(Lease, room_id)
        if lease is None:
            lease = Lease(room_id=room_id, token=0)
            session.add(lease)
        elif lease.owner is not None and lease.expires_at is not None and lease.expires_at > now:
            return None
        lease.token += 1
        lease.owner = owner
        lease.acquired_at = now
        lease.expires_at = now + timedelta(seconds=ttl_seconds)
        token = lease.token
    log.debug("room %s: lease %s acquired by %s", room_id, token, owner)
    return token


def renew_lease(db: Database, room_id: int, owner: str, token: int, ttl_seconds: float) -> bool:
    """Extend a lease held by ``owner`` with ``token`` to ``now + ttl_seconds``.

    ``False`` when the lease expired, was released or taken over: expired means lost, even if no
    one else acquired it yet (the holder must acquire again and gets a new token).
    """
    _check(owner, ttl_seconds)
    now = db.now()
    with db.write() as session:
        lock_room(session, room_id)
        if not holds_lease(session, room_id, token, now):
            return False
        lease = session.get(Lease, room_id)
        assert lease is not None
        if lease.owner != owner:
            return False
        lease.expires_at = now + timedelta(seconds=ttl_seconds)
        return True


def release_lease(db: Database, room_id: int, owner: str, token: int) -> bool:
    """Give the lease up so another worker can take it at once. The token is kept (never reused).

    ``False`` (and no change) when ``owner``/``token`` is not the current holder.
    """
    _check(owner)
    with db.write() as session:
        lock_room(session, room_id)
        lease = session.get(Lease, room_id)
        if lease is None or lease.token != token or lease.owner != owner:
            return False
        lease.owner = None
        lease.expires_at = None
        return True


def get_lease(db: Database, room_id: int) -> Lease | None:
    """The room's lease row as it is now (``None`` if never taken); for display and tests."""
    with db.read() as session:
        return session.get(Lease, room_id)


def lease_is_current(db: Database, room_id: int, token: int) -> bool:
    """Whether ``token`` is the room's current, unexpired lease (a snapshot: may change next)."""
    lease = get_lease(db, room_id)
    now = db.now()
    return (
        lease is not None
        and lease.owner is not None
        and lease.token == token
        and lease.expires_at is not None
        and lease.expires_at > now
    )


def require_lease(db: Database, room_id: int, token: int) -> None:
    """Raise :class:`~storage.errors.LeaseLost` unless ``token`` is current (see above)."""
    if not lease_is_current(db, room_id, token):
        raise LeaseLost(
            f"room {room_id}: lease token {token} is no longer current; stop driving it"
        )


__all__ = [
    "acquire_lease",
    "get_lease",
    "holds_lease",
    "lease_is_current",
    "release_lease",
    "renew_lease",
    "require_lease",
]
