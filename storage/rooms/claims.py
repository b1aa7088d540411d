"""Claiming turns: the first step of the turn protocol, for one room or many in one transaction.

A claim inserts the room's next turn as ``running`` at ``expected_last_seq + 1`` if, inside the
write transaction, the worker's lease token is current, the room's status allows it, the log still
ends where the plan was made, no turn of the room is open and the request id is unused; otherwise
it is refused (``None``) and the worker re-plans. Two workers can never claim the same turn.
:func:`claim_on` is the one implementation, inside the caller's transaction; the public calls are
:func:`~storage.rooms.batch.claim_turns`, :func:`~storage.rooms.batch.claim_turn` and
:func:`~storage.rooms.batch.apply_turns`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Dialect

from storage.checks import require_in
from storage.database.statements import Bound, by_dialect, execute_bound, in_list
from storage.errors import StorageValueError
from storage.rooms.log import check_event_fields
from storage.rooms.rows import (
    EVENT_INSERTS,
    EVENTS,
    RoomProbe,
    event_row,
    event_snapshot,
    lock_rooms,
    open_turn_clause,
    probe_rooms,
)
from storage.tables import Event

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnClaim:
    """One claim for :func:`claim_turns`: the turn ``speaker`` takes in ``room_id`` after the log
    ended at ``expected_last_seq``, fenced by the lease ``token``.

    ``statuses``: the room statuses a claim is allowed in (default only ``running``, so a pause
    takes effect before the next claim; ``None`` skips the check). ``attempts`` and
    ``next_attempt_at`` carry a retry budget over (a turn claimed again after a restart)."""

    room_id: int
    token: int
    expected_last_seq: int
    speaker: str
    request_id: str
    activity: int
    round: int
    kind: str = "agent"
    saw: Sequence[int] | None = None
    model: str | None = None
    parent_event_id: int | None = None
    visible_to: Sequence[str] | None = None
    data: dict[str, Any] | None = None
    attempts: int = 0
    next_attempt_at: datetime | None = None
    statuses: Collection[str] | None = field(default=("running",))
    #: The room's ``edits`` read with the log the plan was made from (None: not checked): an
    #: event of that log changed since (a person's decision, a stop) refuses the claim.
    expected_edits: int | None = None

    def validate(self) -> None:
        """Raise :class:`StorageValueError` for impossible values (nothing is read). That
        ``data`` is strict JSON is checked by its one encoding (:func:`prepare_claims`)."""
        if not self.request_id:
            raise StorageValueError(
                "request_id is required for a turn (a deterministic id per turn)"
            )
        require_in(self.kind, ("agent", "pass"), "kind")
        check_event_fields(
            speaker=self.speaker,
            content="",
            request_id=self.request_id,
            visible_to=self.visible_to,
            saw=self.saw,
        )
        if self.data is not None and not isinstance(self.data, dict):
            raise StorageValueError(f"data must be a dict or None, not {type(self.data).__name__}")

    def row(self, now: datetime) -> dict[str, Any]:
        """The turn's events row: ``running`` at ``expected_last_seq + 1``, empty content."""
        return event_row(
            self.room_id,
            self.expected_last_seq + 1,
            kind=self.kind,
            speaker=self.speaker,
            now=now,
            state="running",
            activity=self.activity,
            round=self.round,
            request_id=self.request_id,
            parent_event_id=self.parent_event_id,
            saw=self.saw,
            model=self.model,
            attempts=self.attempts,
            next_attempt_at=self.next_attempt_at,
            visible_to=self.visible_to,
            data=self.data,
        )

    def refusal(self, probe: RoomProbe, now: datetime) -> str | None:
        """Why the room as ``probe`` read it refuses this claim, or ``None`` when it is allowed."""
        if not probe.holds(self.token, now):
            return f"lease token {self.token} is not current"
        if self.statuses is not None and probe.status not in self.statuses:
            return f"room status is {probe.status!r}"
        if probe.last_seq != self.expected_last_seq:
            return f"last seq is {probe.last_seq}, expected {self.expected_last_seq}"
        if self.expected_edits is not None and probe.edits != self.expected_edits:
            return f"the log was edited ({probe.edits} edits, expected {self.expected_edits})"
        if probe.open_seq is not None:
            return f"turn at seq {probe.open_seq} is still open"
        if probe.request_seq is not None:
            return f"request_id {self.request_id!r} is already seq {probe.request_seq}"
        return None


@dataclass(frozen=True, slots=True)
class PreparedClaims:
    """Claims checked, with their rows, and those rows bound for the database (each value
    converted once, its JSON encoded once: the encoding is the strict-JSON check), before
    any write transaction: an invalid claim raises before anything is read or written."""

    claims: Sequence[TurnClaim]
    rows: list[dict[str, Any]]
    bound: Bound


def prepare_claims(dialect: Dialect, claims: Sequence[TurnClaim], now: datetime) -> PreparedClaims:
    """Check ``claims`` and bind their rows (``running`` at ``expected_last_seq + 1``) for
    ``dialect``; raises :class:`StorageValueError` naming the field of an invalid one."""
    for claim in claims:
        claim.validate()
    rows = [claim.row(now) for claim in claims]
    return PreparedClaims(claims, rows, EVENT_INSERTS.bind(dialect, rows))


def claim_on(
    conn: Connection, prepared: PreparedClaims, now: datetime, *, lock: bool
) -> list[Event | None]:
    """Claim turns inside the caller's write transaction (claims prepared: checked and bound);
    one result per claim, in order. ``lock``: take the rooms' row locks first (server
    databases).

    Each claim is checked on its own (:meth:`TurnClaim.refusal`) and refused on its own (``None``,
    nothing written for it); a missing room is ``None`` too. A second claim for a room sees the
    first. The rooms are probed with one query and the turns inserted with one statement,
    whatever the batch size."""
    claims = prepared.claims
    ids = sorted({claim.room_id for claim in claims})
    if lock:
        lock_rooms(conn, ids)  # server databases: serialise with other writers of these rooms
    probes = probe_rooms(conn, ids)
    rids = sorted({claim.request_id for claim in claims})
    used = {
        (row.room_id, row.request_id): row.seq
        for row in conn.execute(_REQUESTS_IN(conn), {"ids": ids, "rids": rids})
    }
    placed: list[int] = []
    for index, claim in enumerate(claims):
        probe = probes.get(claim.room_id)
        if probe is None:
            continue
        probe = probe._replace(request_seq=used.get((claim.room_id, claim.request_id)))
        refusal = claim.refusal(probe, now)
        if refusal:
            log.debug("room %s: claim of %s refused: %s", claim.room_id, claim.speaker, refusal)
            continue
        seq = claim.expected_last_seq + 1
        # A second claim for the same room in this batch sees this one (log moved, turn open).
        probes[claim.room_id] = probe._replace(last_seq=seq, open_seq=seq)
        used[(claim.room_id, claim.request_id)] = seq
        placed.append(index)
    results: list[Event | None] = [None] * len(claims)
    if placed:
        rows = [prepared.rows[i] for i in placed]
        inserted = _insert_turns(conn, prepared.bound, placed, rows)
        for index, values, event_id in zip(placed, rows, inserted, strict=True):
            results[index] = event_snapshot(id=event_id, **values)
    return results


_REQUESTS_IN = by_dialect(
    lambda server: select(EVENTS.c.room_id, EVENTS.c.request_id, EVENTS.c.seq).where(
        in_list(EVENTS.c.room_id, "ids", server=server),
        in_list(EVENTS.c.request_id, "rids", server=server),
    )
)
#: The open turns of some rooms: after their claims are inserted, exactly those turns (a claim
#: is refused while its room has an open turn), found through the tiny partial index.
_OPEN_TURNS_IN = by_dialect(
    lambda server: select(EVENTS.c.id, EVENTS.c.room_id, EVENTS.c.seq).where(
        in_list(EVENTS.c.room_id, "ids", server=server), open_turn_clause()
    )
)


def _insert_turns(
    conn: Connection, bound: Bound, placed: Sequence[int], rows: Sequence[dict[str, Any]]
) -> list[int]:
    """Insert the claimed turns (``placed``: their indexes in ``bound``) with one
    ``executemany`` of a statement whose text never changes (prepared once on PostgreSQL,
    pipelined by psycopg); their new ids, in order, read back by (room, seq)."""
    execute_bound(conn, Bound(bound.sql, [bound.rows[i] for i in placed]))
    rooms = sorted({row["room_id"] for row in rows})
    ids = {(r.room_id, r.seq): r.id for r in conn.execute(_OPEN_TURNS_IN(conn), {"ids": rooms})}
    return [ids[(row["room_id"], row["seq"])] for row in rows]


__all__ = ["PreparedClaims", "TurnClaim", "claim_on", "prepare_claims"]
