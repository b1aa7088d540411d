"""Many rooms per transaction: what a worker driving hundreds of rooms reads and writes.

A worker that drives N rooms at once would otherwise pay one read transaction and one write
transaction (with its fsync) per room per turn. These functions do the same work for a whole
batch in one transaction each, with every item checked on its own:

- :func:`room_logs`: the rooms and their logs, in one read transaction;
- :func:`apply_turns`: commits (:mod:`storage.rooms.turns`), settlements (:func:`settle_rooms`) and
  claims (:mod:`storage.rooms.claims`) in ONE write transaction, each item fenced on its own;
- :func:`release_leases`: a worker's leases, given back in one write.

One room's calls (:func:`commit_turn`, :func:`claim_turn`) are the batch of one: one write path.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.engine import Connection

from storage.checks import as_set, require_in
from storage.database import Database
from storage.database.statements import by_dialect, in_list
from storage.rooms.claims import TurnClaim, claim_on, prepare_claims
from storage.rooms.log import check_event_fields
from storage.rooms.room import get_room
from storage.rooms.rows import (
    EVENTS,
    INSERT_EVENT,
    LEASES,
    ROOMS,
    RoomProbe,
    event_from_row,
    lock_rooms,
    notice_row,
    probe_rooms,
)
from storage.rooms.turns import TurnCommit, commit_on
from storage.tables import Event, Room
from vocabulary import ROOM_STATUSES, RoomStatus

log = logging.getLogger(__name__)

_ROOMS_IN = by_dialect(
    lambda server: select(ROOMS).where(in_list(ROOMS.c.id, "ids", server=server))
)
_EVENTS_IN = by_dialect(
    lambda server: (
        select(EVENTS)
        .where(in_list(EVENTS.c.room_id, "ids", server=server), EVENTS.c.seq > bindparam("after"))
        .order_by(EVENTS.c.room_id, EVENTS.c.seq)
    )
)


def room_logs(
    db: Database, room_ids: Sequence[int], after_seq: dict[int, int] | None = None
) -> dict[int, tuple[Room, list[Event]]]:
    """``{room_id: (room, events in seq order)}`` for the rooms that exist, read in one
    transaction (a consistent snapshot across all of them).

    With ``after_seq``, only the events after each room's given seq are returned (for a caller
    that keeps the earlier ones); rooms not named there are read whole.
    """
    ids = sorted({int(i) for i in room_ids})
    if not ids:
        return {}
    after = after_seq or {}
    floor = min((after.get(i, 0) for i in ids), default=0)
    with db.read_connection() as conn:
        rooms = {
            row.id: Room.model_construct(**row._mapping)
            for row in conn.execute(_ROOMS_IN(conn), {"ids": ids})
        }
        logs: dict[int, list[Event]] = {room_id: [] for room_id in rooms}
        for row in conn.execute(_EVENTS_IN(conn), {"ids": ids, "after": floor}):
            if row.room_id in logs and row.seq > after.get(row.room_id, 0):
                logs[row.room_id].append(event_from_row(row))
    return {room_id: (room, logs[room_id]) for room_id, room in rooms.items()}


@dataclass(frozen=True, slots=True, kw_only=True)
class RoomSettlement:
    """A status a lease holder sets on a running room, with an optional system event appended
    first (e.g. the termination reason, kept with the event that ended the room).

    ``expected_last_seq`` is the last seq of the log the decision was made from: when the log
    has grown since (a person posted between the plan and this write), the settlement is
    refused, so a room is never settled with a message nobody has answered. ``expected_edits``
    is the room's ``edits`` read with that log: when an event of it changed since (a person
    approved the draft the plan saw waiting), the settlement is refused too."""

    room_id: int
    token: int
    status: str
    expected_last_seq: int | None = None
    expected_edits: int | None = None
    stop_reason: str | None = None
    notice: str | None = None
    notice_data: dict[str, Any] | None = None


def _check_settlements(settlements: Sequence[RoomSettlement]) -> None:
    for item in settlements:
        require_in(item.status, ROOM_STATUSES, "status")
        if item.notice is not None:
            check_event_fields(speaker="room", content=item.notice, data=item.notice_data)


def settle_on(
    conn: Connection, settlements: Sequence[RoomSettlement], now: datetime, *, lock: bool
) -> list[bool]:
    """:func:`settle_rooms` inside the caller's write transaction (items already checked).
    ``lock``: take the rooms' row locks first (server databases)."""
    results: list[bool] = []
    notices: list[dict[str, Any]] = []
    statuses: list[dict[str, Any]] = []
    # All rooms probed by one query (and, on a server database, locked by one before it),
    # then the writes sent as two executemany calls: a few round trips per batch, not three
    # per room. Items for the same room see each other, as if applied one after another.
    ids = sorted({item.room_id for item in settlements})
    if lock:
        lock_rooms(conn, ids)
    probes = probe_rooms(conn, ids)
    for item in settlements:
        probe = probes.get(item.room_id)
        if probe is None or not _settles(item, probe, now):
            results.append(False)
            continue
        if item.notice is not None:
            notices.append(notice_row(item.room_id, probe, item.notice, item.notice_data, now))
            probe = probe._replace(last_seq=probe.last_seq + 1)
        statuses.append(
            {
                "b_room_id": item.room_id,
                "status": item.status,
                "stop_reason": item.stop_reason,
                "updated_at": now,
            }
        )
        probes[item.room_id] = probe._replace(status=item.status)
        results.append(True)
    if notices:
        conn.execute(INSERT_EVENT, notices)
    if statuses:
        conn.execute(_SETTLE_ROOM, statuses)
    return results


def _settles(item: RoomSettlement, probe: RoomProbe, now: datetime) -> bool:
    """Whether ``item`` applies to the room as ``probe`` read it: running, the lease current and
    the log ending where the decision was made, none of its events changed since."""
    return (
        probe.status == RoomStatus.RUNNING
        and probe.holds(item.token, now)
        and (item.expected_last_seq is None or probe.last_seq == item.expected_last_seq)
        and (item.expected_edits is None or probe.edits == item.expected_edits)
    )


_SETTLE_ROOM = (
    update(ROOMS)
    .where(ROOMS.c.id == bindparam("b_room_id"))
    .values(
        status=bindparam("status"),
        stop_reason=bindparam("stop_reason"),
        updated_at=bindparam("updated_at"),
    )
)


def release_leases(db: Database, owner: str, leases: dict[int, int]) -> None:
    """Release many leases of ``owner`` (``{room_id: token}``) in one write transaction; a lease
    no longer held by ``owner`` with that token is left alone (tokens are never reused)."""
    if not leases:
        return
    rows = [
        {"b_room_id": room_id, "b_owner": owner, "b_token": token}
        for room_id, token in sorted(leases.items())
    ]
    with db.write_connection() as conn:
        conn.execute(_RELEASE_LEASE, rows)  # one batch, whatever the number of rooms


_RELEASE_LEASE = (
    update(LEASES)
    .where(
        LEASES.c.room_id == bindparam("b_room_id"),
        LEASES.c.owner == bindparam("b_owner"),
        LEASES.c.token == bindparam("b_token"),
    )
    .values(owner=None, expires_at=None)
)


def apply_turns(
    db: Database,
    *,
    commits: Sequence[TurnCommit] = (),
    settlements: Sequence[RoomSettlement] = (),
    claims: Sequence[TurnClaim] = (),
) -> tuple[list[bool], list[bool], list[Event | None]]:
    """Commit turns, then settle rooms, then claim turns, all in ONE write transaction (one
    fsync): a worker commits a reply and claims the same room's next turn (or writes that it is
    finished) together. The one write path of the turn protocol: every function below is a call
    of it.

    Each item is fenced and refused on its own (:func:`~storage.rooms.turns.commit_on`,
    :func:`settle_on`, :func:`~storage.rooms.claims.claim_on`); a claim or settlement that follows a
    refused commit is refused by the same fences (the turn is not done, the room is not running,
    or the lease is gone). Invalid items raise before anything is written.
    """
    for commit in commits:
        commit.validate()
    _check_settlements(settlements)
    now: datetime = db.now()
    prepared = prepare_claims(db.write_engine.dialect, claims, now)
    if not (commits or settlements or claims):
        return [], [], []
    lock = not db.is_sqlite
    with db.write_connection() as conn:
        committed = commit_on(conn, commits, now, lock=lock) if commits else []
        settled = settle_on(conn, settlements, now, lock=lock) if settlements else []
        claimed = claim_on(conn, prepared, now, lock=lock) if claims else []
    if committed.count(False):
        log.debug("%d of %d results refused by the fence", committed.count(False), len(commits))
    return committed, settled, claimed


def commit_turns(db: Database, batch: Sequence[TurnCommit]) -> list[bool]:
    """Apply many fenced turn results in one write transaction (a group commit): one bool per
    item, in order (see :func:`~storage.rooms.turns.commit_on` for the fence). One fsync for the whole
    batch: this is what makes hundreds of concurrent rooms cheap."""
    return apply_turns(db, commits=batch)[0]


def commit_turn(db: Database, event_id: int, token: int, **fields: Any) -> bool:
    """Commit one turn's result, fenced by the lease ``token`` (see :func:`commit_turns`).

    ``fields`` are those of :class:`~storage.rooms.turns.TurnCommit`: ``state`` (default ``"done"``),
    ``content``, ``kind`` (``"pass"`` when the agent passed), ``model``, ``input_tokens``,
    ``output_tokens``, ``cost``, ``latency``, ``error`` ({type, code, message}), ``attempts``,
    ``next_attempt_at``, ``data`` (merged), ``expected_states``, ``room_status``. ``False`` when
    the fence or the state check refused. A moderated room's draft is committed with
    ``state="waiting"``.
    """
    if "expected_states" in fields:
        fields["expected_states"] = tuple(as_set(fields["expected_states"]) or ())
    return commit_turns(db, [TurnCommit(event_id=event_id, token=token, **fields)])[0]


def settle_rooms(db: Database, settlements: Sequence[RoomSettlement]) -> list[bool]:
    """Apply many settlements in one write transaction; one bool per item, in order.

    Each applies only while its room is ``running``, ``token`` is the room's current,
    unexpired lease (the fence of :func:`~storage.rooms.room.update_room` with
    ``expected_status="running"`` and ``token``) and the log still ends at the item's
    ``expected_last_seq`` (when given); its notice goes at the end of the log.
    """
    return apply_turns(db, settlements=settlements)[1]


def claim_turns(db: Database, claims: Sequence[TurnClaim]) -> list[Event | None]:
    """Claim many turns in one write transaction; one result per claim, in order.

    Each claim inserts its room's next turn as ``running`` at ``expected_last_seq + 1`` only if
    its lease token is current, the room's status is one of its ``statuses``, the log still ends
    at ``expected_last_seq``, no turn of the room is open and its request id is unused; otherwise
    it is refused on its own (``None``; a missing room is ``None`` too) and the worker re-plans.
    To tell a lost lease from a moved log after ``None``, call
    :func:`~storage.rooms.leases.lease_is_current`. Invalid claims raise before anything is written.
    """
    return apply_turns(db, claims=claims)[2]


def claim_turn(db: Database, room_id: int, **fields: Any) -> Event | None:
    """:func:`claim_turns` for one room: ``fields`` are those of
    :class:`~storage.rooms.claims.TurnClaim` (``token``, ``expected_last_seq``, ``speaker``,
    ``request_id``, ``activity``, ``round``, and optionally ``kind``, ``saw``, ``model``,
    ``attempts``, ``next_attempt_at``, ``visible_to``, ``parent_event_id``, ``data``,
    ``statuses``).

    The same checks in the same one write transaction; ``None`` when refused. Raises
    :class:`RoomNotFound` (where the batch says ``None``) and :class:`StorageValueError`.
    """
    [turn] = claim_turns(db, [TurnClaim(room_id=room_id, **fields)])
    if turn is None:
        get_room(db, room_id)  # a room that is gone is an error here, not a refusal
    return turn


__all__ = [
    "RoomSettlement",
    "apply_turns",
    "claim_turn",
    "claim_turns",
    "commit_turn",
    "commit_turns",
    "release_leases",
    "room_logs",
    "settle_on",
    "settle_rooms",
]
