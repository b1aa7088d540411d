"""Per-room leases with fencing tokens (docs/design.md, "Claimed then committed with a fence").

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
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, func, insert, select, text, update

from storage.database import Database
from storage.database.statements import by_dialect, in_list
from storage.errors import LeaseLost, StorageValueError
from storage.rooms.rows import (
    _LEASE,
    EVENTS,
    LEASES,
    ROOMS,
    holds_lease,
    lease_ok,
    lock_room,
    lock_rooms,
)
from storage.tables import OPEN_TURN_WHERE, Lease
from vocabulary import TurnState

log = logging.getLogger(__name__)


def _check(owner: str, ttl_seconds: float | None = None) -> None:
    if not isinstance(owner, str) or not owner:
        raise StorageValueError(
            f"owner={owner!r} must be a non-empty string (e.g. 'host:pid:uuid')"
        )
    if ttl_seconds is not None and not ttl_seconds > 0:
        raise StorageValueError(f"ttl_seconds={ttl_seconds!r} must be > 0")


def acquire_lease(db: Database, room_id: int, owner: str, ttl_seconds: float) -> int | None:
    """Take the room's lease for ``ttl_seconds``; return the new fencing token, or ``None``.

    Succeeds when the lease is free (never taken, released) or expired; returns ``None`` while
    anyone, including ``owner`` itself, holds an unexpired lease (use :func:`renew_lease` to
    extend your own). The token is strictly greater than every token issued before for this room.
    Raises :class:`~storage.errors.RoomNotFound`.
    """
    _check(owner, ttl_seconds)
    now = db.now()
    expires = now + timedelta(seconds=ttl_seconds)
    with db.write_connection() as conn:
        lock_room(conn, room_id)
        row = conn.execute(_LEASE, {"room_id": room_id}).first()
        if row is None:
            token = 1
            conn.execute(
                insert(LEASES).values(
                    room_id=room_id, owner=owner, token=token, acquired_at=now, expires_at=expires
                )
            )
        else:
            held_by, current, expires_at = row
            if held_by is not None and expires_at is not None and expires_at > now:
                return None
            token = int(current) + 1
            conn.execute(
                update(LEASES)
                .where(LEASES.c.room_id == room_id)
                .values(owner=owner, token=token, acquired_at=now, expires_at=expires)
            )
    log.debug("room %s: lease %s acquired by %s", room_id, token, owner)
    return token


_LEASES_OF = by_dialect(
    lambda server: select(
        LEASES.c.room_id, LEASES.c.owner, LEASES.c.token, LEASES.c.expires_at
    ).where(in_list(LEASES.c.room_id, "ids", server=server))
)
_INSERT_LEASE = insert(LEASES)
_TAKE_LEASE = (
    update(LEASES)
    .where(LEASES.c.room_id == bindparam("b_room_id"))
    .values(
        owner=bindparam("owner"),
        token=bindparam("token"),
        acquired_at=bindparam("acquired_at"),
        expires_at=bindparam("expires_at"),
    )
)
_EXTEND_LEASE = (
    update(LEASES)
    .where(LEASES.c.room_id == bindparam("b_room_id"))
    .values(expires_at=bindparam("expires_at"))
)


def acquire_leases(
    db: Database, room_ids: Iterable[int], owner: str, ttl_seconds: float
) -> dict[int, int]:
    """:func:`acquire_lease` for many rooms in one write transaction (rooms locked in id order,
    so two workers taking overlapping sets cannot deadlock): ``{room_id: token}`` of the leases
    taken; rooms held by anyone, or gone, are left out. Whatever the number of rooms: one read
    of their leases, then one insert and one update sent as batches."""
    _check(owner, ttl_seconds)
    ids = sorted(set(room_ids))
    if not ids:
        return {}
    now = db.now()
    expires = now + timedelta(seconds=ttl_seconds)
    taken: dict[int, int] = {}
    fresh: list[dict[str, Any]] = []
    renewed: list[dict[str, Any]] = []
    with db.write_connection() as conn:
        existing = lock_rooms(conn, ids)  # in id order; also: which rooms still exist
        current = {row[0]: row[1:] for row in conn.execute(_LEASES_OF(conn), {"ids": ids})}
        for room_id in ids:
            if room_id not in existing:
                continue
            row = current.get(room_id)
            if row is None:
                taken[room_id] = 1
                fresh.append(
                    {
                        "room_id": room_id,
                        "owner": owner,
                        "token": 1,
                        "acquired_at": now,
                        "expires_at": expires,
                    }
                )
                continue
            held_by, token, expires_at = row
            if held_by is not None and expires_at is not None and expires_at > now:
                continue
            taken[room_id] = int(token) + 1
            renewed.append(
                {
                    "b_room_id": room_id,
                    "owner": owner,
                    "token": taken[room_id],
                    "acquired_at": now,
                    "expires_at": expires,
                }
            )
        if fresh:
            conn.execute(_INSERT_LEASE, fresh)
        if renewed:
            conn.execute(_TAKE_LEASE, renewed)
    if taken:
        log.debug("leases of rooms %s acquired by %s", sorted(taken), owner)
    return taken


def renew_leases(
    db: Database, leases: Mapping[int, int], owner: str, ttl_seconds: float
) -> set[int]:
    """:func:`renew_lease` for many ``{room_id: token}`` in one write transaction (one read of
    the leases, one batched update); returns the rooms whose lease is lost (expired, released
    or taken over)."""
    _check(owner, ttl_seconds)
    if not leases:
        return set()
    now = db.now()
    expires = now + timedelta(seconds=ttl_seconds)
    lost: set[int] = set()
    kept: list[dict[str, Any]] = []
    with db.write_connection() as conn:
        ids = sorted(leases)
        existing = lock_rooms(conn, ids)
        current = {row[0]: row[1:] for row in conn.execute(_LEASES_OF(conn), {"ids": ids})}
        for room_id in ids:
            row = current.get(room_id) if room_id in existing else None
            token = leases[room_id]
            if row is None or row[0] != owner or not lease_ok(row[0], row[1], row[2], token, now):
                lost.add(room_id)
                continue
            kept.append({"b_room_id": room_id, "expires_at": expires})
        if kept:
            conn.execute(_EXTEND_LEASE, kept)
    return lost


def renew_lease(db: Database, room_id: int, owner: str, token: int, ttl_seconds: float) -> bool:
    """Extend a lease held by ``owner`` with ``token`` to ``now + ttl_seconds``.

    ``False`` when the lease expired, was released or taken over: expired means lost, even if no
    one else acquired it yet (the holder must acquire again and gets a new token).
    """
    _check(owner, ttl_seconds)
    now = db.now()
    with db.write_connection() as conn:
        lock_room(conn, room_id)
        row = conn.execute(_LEASE, {"room_id": room_id}).first()
        if row is None or row[0] != owner or not lease_ok(row[0], row[1], row[2], token, now):
            return False
        conn.execute(
            update(LEASES)
            .where(LEASES.c.room_id == room_id)
            .values(expires_at=now + timedelta(seconds=ttl_seconds))
        )
        return True


def release_lease(db: Database, room_id: int, owner: str, token: int) -> bool:
    """Give the lease up so another worker can take it at once. The token is kept (never reused).

    ``False`` (and no change) when ``owner``/``token`` is not the current holder.
    """
    _check(owner)
    with db.write_connection() as conn:
        lock_room(conn, room_id)
        row = conn.execute(_LEASE, {"room_id": room_id}).first()
        if row is None or row[0] != owner or row[1] != token:
            return False
        conn.execute(
            update(LEASES).where(LEASES.c.room_id == room_id).values(owner=None, expires_at=None)
        )
        return True


def get_lease(db: Database, room_id: int) -> Lease | None:
    """The room's lease row as it is now (``None`` if never taken); for display and tests."""
    with db.read() as session:
        return session.get(Lease, room_id)


def lease_is_current(db: Database, room_id: int, token: int) -> bool:
    """Whether ``token`` is the room's current, unexpired lease (a snapshot: may change next)."""
    lease = get_lease(db, room_id)
    return lease is not None and lease_ok(
        lease.owner, lease.token, lease.expires_at, token, db.now()
    )


def require_lease(db: Database, room_id: int, token: int) -> None:
    """Raise :class:`~storage.errors.LeaseLost` unless ``token`` is current (see above)."""
    if not lease_is_current(db, room_id, token):
        raise LeaseLost(
            f"room {room_id}: lease token {token} is no longer current; stop driving it"
        )


_LIVE_HOLDERS = (
    select(LEASES.c.owner, func.min(LEASES.c.acquired_at))
    .where(LEASES.c.owner.is_not(None), LEASES.c.expires_at > bindparam("now"))
    .group_by(LEASES.c.owner)
)
_FREE_LEASES_OF = by_dialect(
    lambda server: (
        update(LEASES)
        .where(in_list(LEASES.c.owner, "owners", server=server))
        .values(owner=None, expires_at=None)
    )
)


def lease_holders(db: Database) -> dict[str, Any]:
    """Every owner holding an unexpired lease now, with the earliest ``acquired_at`` of its
    leases (``{owner: acquired_at}``): what a restarted process reads to recognise leases its
    dead predecessor left behind."""
    with db.read_connection() as conn:
        return dict(conn.execute(_LIVE_HOLDERS, {"now": db.now()}).all())


def free_leases_of(db: Database, owners: Iterable[str]) -> int:
    """Release every lease held by ``owners`` (whose process the caller knows is gone), so their
    rooms are runnable at once instead of after the lease's expiry; returns how many. Tokens are
    kept, so a holder that was in fact alive is fenced out of its next write, never doubled."""
    owners = sorted(set(owners))
    if not owners:
        return 0
    with db.write_connection() as conn:
        freed = conn.execute(_FREE_LEASES_OF(conn), {"owners": owners}).rowcount or 0
    if freed:
        log.info("%d leases of gone owners %s released", freed, owners)
    return freed


def in_flight_leases(
    db: Database, *, room_id: int | None = None, experiment_id: int | None = None
) -> list[tuple[int, str | None, Any, Any]]:
    """The rooms (one room, or an experiment's) with a turn in flight (state ``running``), each
    with its lease as it is now: ``(room_id, owner, expires_at, acquired_at)``. What a page reads
    to tell that a turn lost its process (its lease expired, or its holder is gone) and is being
    recovered. Reads only open turns (their partial index), never a whole log."""
    if (room_id is None) == (experiment_id is None):
        raise StorageValueError("give exactly one of room_id= and experiment_id=")
    query = (
        select(EVENTS.c.room_id, LEASES.c.owner, LEASES.c.expires_at, LEASES.c.acquired_at)
        .select_from(EVENTS.outerjoin(LEASES, LEASES.c.room_id == EVENTS.c.room_id))
        .where(text(OPEN_TURN_WHERE), EVENTS.c.state == TurnState.RUNNING)
        .distinct()
    )
    if room_id is not None:
        query = query.where(EVENTS.c.room_id == room_id)
    else:
        rooms = select(ROOMS.c.id).where(ROOMS.c.experiment_id == experiment_id)
        query = query.where(EVENTS.c.room_id.in_(rooms.scalar_subquery()))
    with db.read_connection() as conn:
        return [tuple(row) for row in conn.execute(query)]  # type: ignore[misc]


__all__ = [
    "acquire_lease",
    "acquire_leases",
    "free_leases_of",
    "get_lease",
    "holds_lease",
    "in_flight_leases",
    "lease_holders",
    "lease_is_current",
    "release_lease",
    "renew_lease",
    "renew_leases",
    "require_lease",
]
