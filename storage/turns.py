"""Agent turns: claim, fenced commit (one or a batch), moderation state changes, retry bookkeeping.

The protocol (DESIGN decision 2), for a worker holding the room's lease ``token``:

1. plan from the committed log (``events``, ``latest_seq``), then :func:`claim_turn`: one write
   transaction that inserts the turn as ``running`` at ``expected_last_seq + 1``, or returns
   ``None`` (log moved, a turn is open, lease lost, room not running) so the worker re-plans;
2. call the model *outside* any transaction (:func:`record_attempt` after a failed try persists
   the retry count and the next attempt time, so the budget survives a restart);
3. :func:`commit_turn` (or :func:`commit_turns` for a group commit): applied only while the lease
   token is still current and unexpired, so a paused zombie's late result is rejected.

A worker that takes over a room finds the open turn with
:func:`~storage.events.open_turn`, rebuilds its prompt from the events before it, and commits
it with its own (newer) token: the fence is on the room's lease, not on who claimed the turn.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Connection

from storage._tx import (
    EVENTS,
    LEASES,
    ROOMS,
    UNSET,
    UPDATE_EVENT,
    RoomProbe,
    _Unset,
    as_set,
    by_dialect,
    check_json,
    event_from_row,
    event_snapshot,
    holds_lease,
    in_list,
    insert_event,
    lease_ok,
    lock_room,
    lock_rooms,
    probe_room,
    require_in,
    touch_room,
    word_count,
)
from storage.database import Database
from storage.errors import EventNotFound, InvalidTransition, StorageValueError
from storage.events import check_event_fields
from storage.tables import Event
from storage.vocabulary import ROOM_STATUSES, TURN_STATES, TURN_TRANSITIONS

log = logging.getLogger(__name__)


def claim_turn(
    db: Database,
    room_id: int,
    *,
    token: int,
    expected_last_seq: int,
    speaker: str,
    request_id: str,
    activity: int,
    round: int,  # noqa: A002 - the column's name
    saw: Sequence[int] | None = None,
    model: str | None = None,
    attempts: int = 0,
    next_attempt_at: datetime | None = None,
    visible_to: Sequence[str] | None = None,
    parent_event_id: int | None = None,
    data: dict[str, Any] | None = None,
    kind: str = "agent",
    statuses: Collection[str] | None = ("running",),
) -> Event | None:
    """Insert the next turn as ``running`` at ``seq = expected_last_seq + 1``; ``None`` if refused.

    All checks and the insert happen in one write transaction, so two workers can never claim the
    same turn. Refused (``None``, nothing written) when:
    - ``token`` is not the room's current, unexpired lease;
    - the room's status is not in ``statuses`` (default: only ``running``; ``None`` skips the check),
      so a pause or stop takes effect before the next claim;
    - the log's last seq is not ``expected_last_seq`` (a human message or another turn landed);
    - a turn of the room is open (``running``, ``waiting`` or ``interrupted``);
    - an event with ``request_id`` already exists in the room (it *is* that turn: see
      :func:`~storage.events.find_event`).
    To tell a lost lease from a moved log after ``None``, call
    :func:`~storage.leases.lease_is_current`. Raises :class:`RoomNotFound`, :class:`StorageValueError`.
    """
    require_in(kind, ("agent", "pass"), "kind")
    check_event_fields(
        speaker=speaker,
        content="",
        request_id=request_id,
        visible_to=visible_to,
        data=data,
        saw=saw,
    )
    if request_id is None:
        raise StorageValueError("request_id is required for a turn (a deterministic id per turn)")
    now = db.now()
    with db.write_connection() as conn:
        probe = probe_room(conn, room_id, request_id)
        refusal = _claim_refusal(probe, token, expected_last_seq, request_id, statuses, now)
        if refusal:
            log.debug("room %s: claim of %s refused: %s", room_id, speaker, refusal)
            return None
        values: dict[str, Any] = {
            "room_id": room_id,
            "seq": expected_last_seq + 1,
            "activity": activity,
            "round": round,
            "kind": kind,
            "speaker": speaker,
            "content": "",
            "words": 0,
            "state": "running",
            "request_id": request_id,
            "parent_event_id": parent_event_id,
            "saw": list(saw) if saw is not None else None,
            "model": model,
            "attempts": attempts,
            "next_attempt_at": next_attempt_at,
            "visible_to": list(visible_to) if visible_to is not None else None,
            "data": data,
            "created_at": now,
            "updated_at": now,
        }
        # No touch_room here: the commit that follows bumps rooms.updated_at.
        event_id = insert_event(conn, values)
        return event_snapshot(id=event_id, **values)


def _claim_refusal(
    probe: RoomProbe,
    token: int,
    expected_last_seq: int,
    request_id: str,
    statuses: Collection[str] | None,
    now: datetime,
) -> str | None:
    if not probe.holds(token, now):
        return f"lease token {token} is not current"
    if statuses is not None and probe.status not in statuses:
        return f"room status is {probe.status!r}"
    if probe.last_seq != expected_last_seq:
        return f"last seq is {probe.last_seq}, expected {expected_last_seq}"
    if probe.open_seq is not None:
        return f"turn at seq {probe.open_seq} is still open"
    if probe.request_seq is not None:
        return f"request_id {request_id!r} is already seq {probe.request_seq}"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCommit:
    """One fenced turn result for :func:`commit_turns`.

    Fields left ``UNSET`` keep their stored value; ``data`` is merged key by key into the stored
    ``data`` (``None``: no change). ``expected_states`` is where the turn must be now (default
    ``running``); the move to ``state`` must be allowed by ``TURN_TRANSITIONS``.

    ``room_status`` (with ``stop_reason``) moves the turn's room in the same transaction, if the
    commit applies and the room is still ``running``: a draft and the room's ``waiting``, a failed
    turn and the room's ``failed`` are one write, never two that another process sees between.
    """

    event_id: int
    token: int
    state: str = "done"
    speaker: str | _Unset = UNSET
    content: str | _Unset = UNSET
    kind: str | _Unset = UNSET
    model: str | None | _Unset = UNSET
    input_tokens: int | None | _Unset = UNSET
    output_tokens: int | None | _Unset = UNSET
    cost: float | None | _Unset = UNSET
    latency: float | None | _Unset = UNSET
    error: dict[str, Any] | None | _Unset = UNSET
    attempts: int | _Unset = UNSET
    next_attempt_at: datetime | None | _Unset = UNSET
    data: dict[str, Any] | None = None
    expected_states: tuple[str, ...] = field(default=("running",))
    room_status: str | None = None
    stop_reason: str | None = None

    def validate(self) -> None:
        """Raise :class:`StorageValueError`/:class:`InvalidTransition` for impossible values."""
        require_in(self.state, TURN_STATES, "state")
        if self.room_status is not None:
            require_in(self.room_status, ROOM_STATUSES, "room_status")
        if not isinstance(self.kind, _Unset):
            require_in(self.kind, ("agent", "pass"), "kind")
        if not isinstance(self.speaker, _Unset):
            check_event_fields(speaker=self.speaker, content="")
        if not isinstance(self.content, _Unset) and not isinstance(self.content, str):
            raise StorageValueError(f"content must be a string, not {type(self.content).__name__}")
        if not isinstance(self.error, (_Unset, type(None))):
            _check_error(self.error)
        if self.data is not None:
            check_event_fields(speaker="-", content="", data=self.data)
        check_transition(self.expected_states, self.state)

    def given(self) -> dict[str, Any]:
        """The turn columns this commit sets (those not left ``UNSET``), ``state`` included."""
        values: dict[str, Any] = {"state": self.state}
        for name in _COMMIT_COLUMNS:
            value = getattr(self, name)
            if not isinstance(value, _Unset):
                values[name] = value
        return values

    def values(self, stored_data: dict[str, Any] | None, now: datetime) -> dict[str, Any]:
        """The column values to write."""
        values = {**self.given(), "updated_at": now}
        if "content" in values:
            values["words"] = word_count(values["content"])
        if self.data is not None:
            values["data"] = {**(stored_data or {}), **self.data}
        return values


_COMMIT_COLUMNS = (
    "speaker",
    "content",
    "kind",
    "model",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency",
    "error",
    "attempts",
    "next_attempt_at",
)


def _check_error(error: Any) -> None:
    if not isinstance(error, dict) or not {"type", "message"} <= set(error):
        raise StorageValueError(
            f"error={error!r} must be a dict with at least 'type' and 'message' (and 'code')"
        )
    check_json(error, "error")


def check_transition(expected_states: Collection[str], state: str) -> None:
    """Raise :class:`InvalidTransition` unless every ``expected -> state`` move is allowed."""
    if not expected_states:
        raise StorageValueError("expected_states must name at least one state")
    for expected in expected_states:
        require_in(expected, TURN_STATES, "expected state")
        if state not in TURN_TRANSITIONS[expected]:
            allowed = ", ".join(sorted(TURN_TRANSITIONS[expected])) or "nothing (terminal)"
            raise InvalidTransition(
                f"a turn cannot go from {expected!r} to {state!r}; from {expected!r} it may go "
                f"to: {allowed}"
            )


def commit_turns(db: Database, batch: Sequence[TurnCommit]) -> list[bool]:
    """Apply many fenced turn results in one write transaction (a group commit).

    Each item is fenced independently: it applies only if its room's lease token equals
    ``item.token`` and has not expired, and the turn's state is one of ``item.expected_states``.
    Returns one bool per item, in order (``False``: not applied; a missing event, e.g. its room was
    deleted meanwhile, is ``False`` too). Invalid items raise before anything is written.
    One fsync for the whole batch: this is what makes hundreds of concurrent rooms cheap.
    """
    for item in batch:
        item.validate()
    if not batch:
        return []
    now = db.now()
    with db.write_connection() as conn:
        results = commit_on(conn, batch, now, lock=not db.is_sqlite)
    refused = results.count(False)
    if refused:
        log.debug("commit_turns: %d of %d results refused by the fence", refused, len(batch))
    return results


def commit_on(
    conn: Connection, batch: Sequence[TurnCommit], now: datetime, *, lock: bool
) -> list[bool]:
    """:func:`commit_turns` inside the caller's write transaction (items already validated).
    ``lock``: take the rooms' row locks first (server databases)."""
    ids = sorted({item.event_id for item in batch})
    if lock:
        # Lock the rooms first (in id order), then read the turns: on a server database a
        # state read before the lock could be stale by the time we write.
        lock_rooms(conn, conn.execute(_ROOMS_OF(conn), {"ids": ids}).scalars())
    stored = {row[0]: list(row[1:]) for row in conn.execute(_FENCE_ROWS(conn), {"ids": ids})}
    touched: set[int] = set()
    results = []
    # Consecutive updates that set the same columns go out as one executemany: on PostgreSQL
    # psycopg pipelines it (one round trip for the batch instead of one per turn); order is
    # kept, so two items for one event apply in the order given.
    runs: list[list[dict[str, Any]]] = []
    moves: list[dict[str, Any]] = []
    for item in batch:
        current = stored.get(item.event_id)
        if current is None:
            results.append(False)
            continue
        room_id, state, data, owner, token, expires_at = current
        if not lease_ok(owner, token, expires_at, item.token, now) or (
            state not in item.expected_states
        ):
            results.append(False)
            continue
        values = item.values(data, now)
        params = {"b_event_id": item.event_id, **values}
        if runs and runs[-1][0].keys() == params.keys():
            runs[-1].append(params)
        else:
            runs.append([params])
        current[1] = item.state
        current[2] = values.get("data", data)
        if item.room_status is not None:
            moves.append(
                {
                    "b_room_id": room_id,
                    "status": item.room_status,
                    "stop_reason": item.stop_reason,
                    "updated_at": now,
                }
            )
        touched.add(room_id)
        results.append(True)
    for run in runs:
        conn.execute(UPDATE_EVENT, run)
    if moves:
        conn.execute(_MOVE_RUNNING_ROOM, moves)
    if touched:
        conn.execute(_TOUCH_ROOMS(conn), {"ids": sorted(touched), "now": now})
    return results


#: SET columns come from the execute parameters (status, stop_reason, updated_at).
_MOVE_RUNNING_ROOM = update(ROOMS).where(
    ROOMS.c.id == bindparam("b_room_id"), ROOMS.c.status == "running"
)
_TOUCH_ROOMS = by_dialect(
    lambda server: (
        update(ROOMS)
        .where(in_list(ROOMS.c.id, "ids", server=server))
        .values(updated_at=bindparam("now"))
    )
)
_ROOMS_OF = by_dialect(
    lambda server: sa_select(EVENTS.c.room_id).where(in_list(EVENTS.c.id, "ids", server=server))
)
_FENCE_ROWS = by_dialect(
    lambda server: (
        sa_select(
            EVENTS.c.id,
            EVENTS.c.room_id,
            EVENTS.c.state,
            EVENTS.c.data,
            LEASES.c.owner,
            LEASES.c.token,
            LEASES.c.expires_at,
        )
        .select_from(EVENTS.outerjoin(LEASES, LEASES.c.room_id == EVENTS.c.room_id))
        .where(in_list(EVENTS.c.id, "ids", server=server))
    )
)


def commit_turn(db: Database, event_id: int, token: int, **fields: Any) -> bool:
    """Commit one turn's result, fenced by the lease ``token`` (see :func:`commit_turns`).

    ``fields`` are those of :class:`TurnCommit`: ``state`` (default ``"done"``), ``content``,
    ``kind`` (``"pass"`` when the agent passed), ``model``, ``input_tokens``, ``output_tokens``,
    ``cost``, ``latency``, ``error`` ({type, code, message}), ``attempts``, ``next_attempt_at``,
    ``data`` (merged), ``expected_states``. ``False`` when the fence or the state check refused.
    A moderated room's draft is committed with ``state="waiting"``.
    """
    if "expected_states" in fields:
        fields["expected_states"] = tuple(as_set(fields["expected_states"]) or ())
    return commit_turns(db, [TurnCommit(event_id=event_id, token=token, **fields)])[0]


def update_turn_state(
    db: Database,
    event_id: int,
    *,
    expected_state: str | Collection[str],
    state: str,
    content: str | _Unset = UNSET,
    speaker: str | _Unset = UNSET,
    error: dict[str, Any] | None | _Unset = UNSET,
    data: dict[str, Any] | None = None,
    next_attempt_at: datetime | None | _Unset = UNSET,
    token: int | None = None,
    room_status: str | None = None,
    room_from: Collection[str] = (),
) -> Event | None:
    """Move a turn between states with an optimistic check; return it, or ``None`` if refused.

    With ``room_status``, the turn's room moves to it in the same transaction when its status is
    one of ``room_from`` (a decided draft and the room going on are one write; the stop reason is
    cleared).

    For moderation from the UI (no lease needed): approve (``waiting -> done``, optionally with
    edited ``content``), deny (``waiting -> running``, with the reason in ``data``, so the agent
    tries again), stop (``running``/``waiting`` -> ``stopped``), abandon (``waiting``/
    ``interrupted`` -> ``abandoned``), resume (``interrupted -> running``), mark interrupted.
    Refused (``None``) when the turn is not in ``expected_state`` now (two tabs approving at once
    apply once) or, when ``token`` is given, when that lease is not current. Disallowed moves raise
    :class:`InvalidTransition` before anything is read; raises :class:`EventNotFound`.
    """
    expected = tuple(sorted(as_set(expected_state) or ()))
    commit = TurnCommit(
        event_id=event_id,
        token=token if token is not None else -1,
        state=state,
        content=content,
        speaker=speaker,
        error=error,
        data=data,
        next_attempt_at=next_attempt_at,
        expected_states=expected,
    )
    commit.validate()
    now = db.now()
    with db.write_connection() as conn:
        current = _locked_turn(conn, event_id)
        if current.state not in expected:
            return None
        if token is not None and not holds_lease(conn, current.room_id, token, now):
            return None
        values = commit.values(current.data, now)
        conn.execute(UPDATE_EVENT, {"b_event_id": event_id, **values})
        touch_room(conn, current.room_id, now)
        if room_status is not None and room_from:
            conn.execute(
                update(ROOMS)
                .where(ROOMS.c.id == current.room_id, ROOMS.c.status.in_(sorted(room_from)))
                .values(status=room_status, stop_reason=None, updated_at=now)
            )
        return event_snapshot(**{**current.model_dump(), **values})


def _locked_turn(conn: Connection, event_id: int) -> Event:
    """Lock the event's room, then read the event (so the state read is the latest committed)."""
    room_id = conn.execute(_ROOMS_OF(conn), {"ids": [event_id]}).scalar()
    if room_id is None:
        raise EventNotFound(f"event {event_id} does not exist")
    lock_room(conn, room_id)
    row = conn.execute(sa_select(EVENTS).where(EVENTS.c.id == event_id)).first()
    if row is None:
        raise EventNotFound(f"event {event_id} does not exist")
    return event_from_row(row)


def record_attempt(
    db: Database,
    event_id: int,
    token: int,
    *,
    error: dict[str, Any] | None = None,
    next_attempt_at: datetime | None = None,
) -> int | None:
    """Count one more failed try of a ``running`` turn; return the new count, or ``None``.

    Stores the error ({type, code, message}) and when to try next, fenced by the lease ``token``;
    the turn stays ``running``. After a restart the next worker reads ``attempts`` and
    ``next_attempt_at`` from the turn, so a retry budget is never reset by crashing.
    """
    if error is not None:
        _check_error(error)
    now = db.now()
    with db.write_connection() as conn:
        current = _locked_turn(conn, event_id)
        if current.state != "running" or not holds_lease(conn, current.room_id, token, now):
            return None
        attempts = current.attempts + 1
        conn.execute(
            update(EVENTS)
            .where(EVENTS.c.id == event_id)
            .values(attempts=attempts, error=error, next_attempt_at=next_attempt_at, updated_at=now)
        )
        return attempts


__all__ = [
    "TurnCommit",
    "commit_on",
    "check_transition",
    "claim_turn",
    "commit_turn",
    "commit_turns",
    "record_attempt",
    "update_turn_state",
]
