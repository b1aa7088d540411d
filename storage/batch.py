"""Many rooms per transaction: the reads and claims a worker driving hundreds of rooms needs.

A worker that drives N rooms at once would otherwise pay one read transaction and one write
transaction (with its fsync) per room per turn. These functions do the same work for a whole
batch in one transaction each, with every item checked on its own exactly as the single-room
functions check it:

- :func:`room_logs`: the rooms and their full logs, in one read transaction;
- :func:`claim_turns`: :func:`~storage.turns.claim_turn` for many rooms in one write
  transaction (each claim fenced by its own lease token, refused on its own);
- group commits are :func:`~storage.turns.commit_turns`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from storage._tx import (
    EVENTS,
    INSERT_EVENT,
    LEASES,
    ROOM_AND_LEASE,
    ROOMS,
    RoomProbe,
    by_dialect,
    event_from_row,
    event_snapshot,
    in_list,
    lock_rooms,
    probe_columns,
    require_in,
    word_count,
)
from storage.database import Database
from storage.errors import StorageValueError
from storage.events import check_event_fields
from storage.tables import Event, Room
from storage.turns import TurnCommit, _claim_refusal, commit_on
from storage.vocabulary import ROOM_STATUSES

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
    refused, so a room is never settled with a message nobody has answered."""

    room_id: int
    token: int
    status: str
    expected_last_seq: int | None = None
    stop_reason: str | None = None
    notice: str | None = None
    notice_data: dict[str, Any] | None = None


def settle_rooms(db: Database, settlements: Sequence[RoomSettlement]) -> list[bool]:
    """Apply many settlements in one write transaction; one bool per item, in order.

    Each applies only while its room is ``running``, ``token`` is the room's current,
    unexpired lease (the fence of :func:`~storage.rooms.update_room` with
    ``expected_status="running"`` and ``token``) and the log still ends at the item's
    ``expected_last_seq`` (when given); its notice goes at the end of the log.
    """
    _check_settlements(settlements)
    if not settlements:
        return []
    now: datetime = db.now()
    with db.write_connection() as conn:
        return settle_on(conn, settlements, now, lock=not db.is_sqlite)


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
    probes = _probe_many(conn, ids)
    for item in settlements:
        probe = probes.get(item.room_id)
        if (
            probe is None
            or probe.status != "running"
            or not probe.holds(item.token, now)
            or (item.expected_last_seq is not None and probe.last_seq != item.expected_last_seq)
        ):
            results.append(False)
            continue
        seq = probe.last_seq
        if item.notice is not None:
            seq += 1
            notices.append(
                {
                    "room_id": item.room_id,
                    "seq": seq,
                    "activity": probe.last_activity,
                    "round": probe.last_round,
                    "kind": "system",
                    "speaker": "room",
                    "content": item.notice,
                    "words": word_count(item.notice),
                    "state": None,
                    "request_id": None,
                    "parent_event_id": None,
                    "saw": None,
                    "model": None,
                    "attempts": 0,
                    "next_attempt_at": None,
                    "visible_to": None,
                    "data": item.notice_data,
                    "created_at": now,
                    "updated_at": now,
                }
            )
        statuses.append(
            {
                "b_room_id": item.room_id,
                "status": item.status,
                "stop_reason": item.stop_reason,
                "updated_at": now,
            }
        )
        probes[item.room_id] = probe._replace(status=item.status, last_seq=seq)
        results.append(True)
    if notices:
        conn.execute(INSERT_EVENT, notices)
    if statuses:
        conn.execute(_SETTLE_ROOM, statuses)
    return results


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


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnClaim:
    """One claim for :func:`claim_turns` (the arguments of :func:`claim_turn`)."""

    room_id: int
    token: int
    expected_last_seq: int
    speaker: str
    request_id: str
    activity: int
    round: int
    saw: Sequence[int] | None = None
    model: str | None = None
    parent_event_id: int | None = None
    visible_to: Sequence[str] | None = None
    data: dict[str, Any] | None = None
    statuses: tuple[str, ...] | None = field(default=("running",))

    def validate(self) -> None:
        if not self.request_id:
            raise StorageValueError(
                "request_id is required for a turn (a deterministic id per turn)"
            )
        check_event_fields(
            speaker=self.speaker,
            content="",
            request_id=self.request_id,
            visible_to=self.visible_to,
            data=self.data,
            saw=self.saw,
        )


def _build_probe_many(server: bool) -> Any:
    """The single-room probe of :func:`~storage._tx.probe_room` for many rooms at once (without
    the request-id part, read separately)."""
    return (
        select(ROOMS.c.id, *probe_columns())
        .select_from(ROOM_AND_LEASE)
        .where(in_list(ROOMS.c.id, "ids", server=server))
    )


_PROBE_MANY = by_dialect(_build_probe_many)


def _probe_many(conn: Connection, ids: Sequence[int]) -> dict[int, RoomProbe]:
    """``{room_id: probe}`` of the rooms that exist (the request-id part left empty)."""
    probes: dict[int, RoomProbe] = {}
    for row in conn.execute(_PROBE_MANY(conn), {"ids": list(ids)}):
        room_id, status, owner, token, expires_at, last, activity, round_, open_seq = row
        probes[room_id] = RoomProbe(
            status,
            owner,
            token,
            expires_at,
            int(last or 0),
            activity or 0,
            round_ or 0,
            open_seq,
            None,
        )
    return probes


_REQUESTS_IN = by_dialect(
    lambda server: select(EVENTS.c.room_id, EVENTS.c.request_id, EVENTS.c.seq).where(
        in_list(EVENTS.c.room_id, "ids", server=server),
        in_list(EVENTS.c.request_id, "rids", server=server),
    )
)
_INSERT_RETURNING = INSERT_EVENT.returning(EVENTS.c.id, sort_by_parameter_order=True)
#: The columns :func:`claim_turns` writes, in the order of its rows.
_TURN_COLUMNS = (
    "room_id",
    "seq",
    "activity",
    "round",
    "kind",
    "speaker",
    "content",
    "words",
    "state",
    "request_id",
    "parent_event_id",
    "saw",
    "model",
    "attempts",
    "next_attempt_at",
    "visible_to",
    "data",
    "created_at",
    "updated_at",
)


def _build_recordset_insert() -> Any:
    """PostgreSQL: insert a batch of turns from one JSON parameter (``json_to_recordset``).

    A multi-row ``VALUES`` insert has one placeholder per value, so its text changes with the
    batch size: with 200 claims the driver parses ~3,800 placeholders per batch and the server
    plans a new statement each time: ~30 ms per batch measured here, 40% of a worker's
    statement time. This statement's text never changes (parsed and prepared once). JSON ``null``
    becomes SQL NULL, as :func:`~storage.coltypes.JSONDoc` stores ``None``.
    """
    dialect = postgresql.dialect()
    names = ", ".join(_TURN_COLUMNS)
    typed = ", ".join(f"{n} {EVENTS.c[n].type.compile(dialect=dialect)}" for n in _TURN_COLUMNS)
    return text(
        f"INSERT INTO events ({names}) SELECT {names} "
        f"FROM json_to_recordset(CAST(:rows AS JSON)) AS r({typed}) "
        "RETURNING id, room_id, seq"
    )


_INSERT_RECORDSET = _build_recordset_insert()


def _insert_turns(conn: Connection, rows: list[dict[str, Any]]) -> list[int]:
    """Insert claimed turns; their new ids, in the order of ``rows``."""
    if conn.dialect.name != "postgresql":
        return [row[0] for row in conn.execute(_INSERT_RETURNING, rows)]
    payload = json.dumps(
        [{name: row[name] for name in _TURN_COLUMNS} for row in rows],
        default=_iso,
        allow_nan=False,
    )
    # RETURNING after INSERT ... SELECT has no guaranteed order: match rows by (room, seq),
    # which the events table keeps unique.
    ids = {(r.room_id, r.seq): r.id for r in conn.execute(_INSERT_RECORDSET, {"rows": payload})}
    return [ids[(row["room_id"], row["seq"])] for row in rows]


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def claim_turns(db: Database, claims: Sequence[TurnClaim]) -> list[Event | None]:
    """Claim many turns in one write transaction; one result per claim, in order.

    Each claim is checked exactly as :func:`~storage.turns.claim_turn` checks it (current
    lease, room status, expected last seq, no open turn, unused request id) and refused on its own
    (``None``); a missing room is ``None`` too. Invalid claims raise before anything is written.
    The rooms are probed with one query and the turns inserted with one statement, whatever the
    batch size.
    """
    for claim in claims:
        claim.validate()
    if not claims:
        return []
    now: datetime = db.now()
    with db.write_connection() as conn:
        return claim_on(conn, claims, now, lock=not db.is_sqlite)


def claim_on(
    conn: Connection, claims: Sequence[TurnClaim], now: datetime, *, lock: bool
) -> list[Event | None]:
    """:func:`claim_turns` inside the caller's write transaction (claims already validated).
    ``lock``: take the rooms' row locks first (server databases)."""
    ids = sorted({claim.room_id for claim in claims})
    results: list[Event | None] = [None] * len(claims)
    if lock:
        lock_rooms(conn, ids)  # server databases: serialise with other writers of these rooms
    probes = _probe_many(conn, ids)
    rids = sorted({claim.request_id for claim in claims})
    used = {
        (row.room_id, row.request_id): row.seq
        for row in conn.execute(_REQUESTS_IN(conn), {"ids": ids, "rids": rids})
    }
    rows: list[dict[str, Any]] = []
    placed: list[int] = []
    for index, claim in enumerate(claims):
        probe = probes.get(claim.room_id)
        if probe is None:
            continue
        probe = probe._replace(request_seq=used.get((claim.room_id, claim.request_id)))
        if _claim_refusal(
            probe, claim.token, claim.expected_last_seq, claim.request_id, claim.statuses, now
        ):
            continue
        seq = claim.expected_last_seq + 1
        # A second claim for the same room in this batch sees this one (log moved, turn open).
        probes[claim.room_id] = probe._replace(last_seq=seq, open_seq=seq)
        used[(claim.room_id, claim.request_id)] = seq
        rows.append(
            {
                "room_id": claim.room_id,
                "seq": seq,
                "activity": claim.activity,
                "round": claim.round,
                "kind": "agent",
                "speaker": claim.speaker,
                "content": "",
                "words": 0,
                "state": "running",
                "request_id": claim.request_id,
                "parent_event_id": claim.parent_event_id,
                "saw": list(claim.saw) if claim.saw is not None else None,
                "model": claim.model,
                "attempts": 0,
                "next_attempt_at": None,
                "visible_to": list(claim.visible_to) if claim.visible_to is not None else None,
                "data": claim.data,
                "created_at": now,
                "updated_at": now,
            }
        )
        placed.append(index)
    if rows:
        inserted = _insert_turns(conn, rows)
        for index, values, event_id in zip(placed, rows, inserted, strict=True):
            results[index] = event_snapshot(id=event_id, **values)
    return results


def apply_turns(
    db: Database,
    *,
    commits: Sequence[TurnCommit] = (),
    settlements: Sequence[RoomSettlement] = (),
    claims: Sequence[TurnClaim] = (),
) -> tuple[list[bool], list[bool], list[Event | None]]:
    """Commit turns, then settle rooms, then claim turns, all in ONE write transaction (one
    fsync): a worker commits a reply and claims the same room's next turn (or writes that it is
    finished) together. Each item is fenced and refused on its own exactly as in
    :func:`~storage.turns.commit_turns`, :func:`settle_rooms` and :func:`claim_turns`; a claim or
    settlement that follows a refused commit is refused by the same fences (the turn is not done,
    the room is not running, or the lease is gone). Invalid items raise before anything is written.
    """
    for commit in commits:
        commit.validate()
    _check_settlements(settlements)
    for claim in claims:
        claim.validate()
    if not (commits or settlements or claims):
        return [], [], []
    now: datetime = db.now()
    lock = not db.is_sqlite
    with db.write_connection() as conn:
        committed = commit_on(conn, commits, now, lock=lock) if commits else []
        settled = settle_on(conn, settlements, now, lock=lock) if settlements else []
        claimed = claim_on(conn, claims, now, lock=lock) if claims else []
    return committed, settled, claimed


__all__ = [
    "RoomSettlement",
    "apply_turns",
    "claim_on",
    "settle_on",
    "TurnClaim",
    "claim_turns",
    "release_leases",
    "room_logs",
    "settle_rooms",
]
