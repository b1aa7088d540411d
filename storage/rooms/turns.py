"""Turn results: fenced commits (one or a batch), moderation state changes, retry bookkeeping.

The protocol (decision "a turn is claimed, then committed with a fence"), for a worker holding the
room's lease ``token``: claim (:mod:`storage.rooms.claims`), call the model *outside* any transaction
(:func:`record_attempt` after a failed try persists the retry count and the next attempt time, so
the budget survives a restart), then commit: applied only while the lease token is still current
and unexpired, so a paused zombie's late result is rejected. :func:`commit_on` is the one
implementation; :func:`commit_turns` runs it in its own transaction and
:func:`~storage.rooms.batch.apply_turns` with settlements and claims in one.

A worker that takes over a room finds the open turn with
:func:`~storage.rooms.log.open_turn`, rebuilds its prompt from the events before it, and commits
it with its own (newer) token: the fence is on the room's lease, not on who claimed the turn.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Connection

from storage.checks import UNSET, _Unset, as_set, require_in
from storage.database import Database
from storage.database.statements import by_dialect, execute_bound, in_list
from storage.errors import EventNotFound, InvalidTransition, StorageValueError
from storage.rooms.drafts import drop_drafts
from storage.rooms.log import check_error, check_event_fields
from storage.rooms.rows import (
    EVENT_UPDATES,
    EVENTS,
    LEASES,
    ROOMS,
    event_from_row,
    event_snapshot,
    holds_lease,
    lease_ok,
    lock_room,
    lock_rooms,
    note_edit,
    touch_room,
    word_count,
)
from storage.tables import Event
from vocabulary import ROOM_STATUSES, TURN_STATES, TURN_TRANSITIONS, RoomStatus, TurnState


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
            check_error(self.error)
        if self.data is not None:
            # checked here, whether or not the fence lets it through (the stored data it is
            # merged into is encoded with it when written)
            check_event_fields(speaker="-", content="", data=self.data)
        check_transition(self.expected_states, self.state)

    def given(self) -> dict[str, Any]:
        """The turn columns this commit sets (those not left ``UNSET``), ``state`` included."""
        values: dict[str, Any] = {"state": self.state}
        for name in _COMMIT_COLUMNS:
            value = getattr(self, name)
            if value is not UNSET:  # the one marker (an enum member): identity is enough
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


def commit_on(
    conn: Connection, batch: Sequence[TurnCommit], now: datetime, *, lock: bool
) -> list[bool]:
    """Apply fenced turn results inside the caller's write transaction (items validated); one
    bool per item, in order. ``lock``: take the rooms' row locks first (server databases).

    Each item applies only if its room's lease token is ``item.token``, unexpired, and the
    turn's state is one of ``item.expected_states`` (else ``False``, also for a missing event:
    its room deleted meanwhile). Two items for one event apply in the order given."""
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
            moves.append(_room_move(room_id, item, now))
        touched.add(room_id)
        results.append(True)
    # Every run bound (its JSON encoded and checked) before any is written.
    for bound in [EVENT_UPDATES.bind(conn.dialect, run) for run in runs]:
        execute_bound(conn, bound)
    # A committed turn's partial draft (and any stop request) goes with the commit.
    drop_drafts(conn, [r["b_event_id"] for run in runs for r in run])
    if moves:
        conn.execute(_MOVE_RUNNING_ROOM, moves)
    if touched:
        conn.execute(_TOUCH_ROOMS(conn), {"ids": sorted(touched), "now": now})
    return results


def _room_move(room_id: int, item: TurnCommit, now: datetime) -> dict[str, Any]:
    """The parameters of ``_MOVE_RUNNING_ROOM`` for a commit that moves its room."""
    return {
        "b_room_id": room_id,
        "status": item.room_status,
        "stop_reason": item.stop_reason,
        "updated_at": now,
    }


#: SET columns come from the execute parameters (status, stop_reason, updated_at).
_MOVE_RUNNING_ROOM = update(ROOMS).where(
    ROOMS.c.id == bindparam("b_room_id"), ROOMS.c.status == RoomStatus.RUNNING
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
    expected_content: str | None = None,
) -> Event | None:
    """Move a turn between states with an optimistic check; return it, or ``None`` if refused.
    With ``room_status``, the turn's room moves to it in the same transaction when its status is
    one of ``room_from`` (a decided draft and the room going on are one write; the stop reason is
    cleared). For moderation from the UI (no lease needed): approve (``waiting -> done``, maybe
    with edited ``content``), deny (``waiting -> running``, the reason in ``data``: the agent
    tries again), stop (``running``/``waiting`` -> ``stopped``), abandon (``waiting``/
    ``interrupted`` -> ``abandoned``), resume (``interrupted -> running``), mark interrupted.
    Refused (``None``) when the turn is not in ``expected_state`` now (two tabs approving at once
    apply once), when its content is not ``expected_content`` (the draft a person read was
    replaced meanwhile), or when ``token`` is given and that lease is not current. Disallowed
    moves raise :class:`InvalidTransition` before anything is read; :class:`EventNotFound`."""
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
        if expected_content is not None and current.content != expected_content:
            return None
        if token is not None and not holds_lease(conn, current.room_id, token, now):
            return None
        values = commit.values(current.data, now)
        EVENT_UPDATES.execute(conn, [{"b_event_id": event_id, **values}])
        note_edit(conn, current.room_id, now)  # a plan made before this decision is refused
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
    counted: bool = True,
) -> int | None:
    """Count one more failed try of a ``running`` turn; return the new count, or ``None``.

    ``counted=False`` records the error and the next attempt time without counting a try (a
    model server that is down: waiting for it spends no retry budget).

    Stores the error ({type, code, message}) and when to try next, fenced by the lease ``token``;
    the turn stays ``running``. After a restart the next worker reads ``attempts`` and
    ``next_attempt_at`` from the turn, so a retry budget is never reset by crashing.
    """
    if error is not None:
        check_error(error)
    now = db.now()
    with db.write_connection() as conn:
        current = _locked_turn(conn, event_id)
        if current.state != TurnState.RUNNING or not holds_lease(conn, current.room_id, token, now):
            return None
        attempts = current.attempts + (1 if counted else 0)
        conn.execute(
            update(EVENTS)
            .where(EVENTS.c.id == event_id)
            .values(attempts=attempts, error=error, next_attempt_at=next_attempt_at, updated_at=now)
        )
        # What the room's pages say changes (a retry, "waiting for the model server"), and a
        # live page reruns when the room row does.
        touch_room(conn, current.room_id, now)
        return attempts


__all__ = [
    "TurnCommit",
    "commit_on",
    "check_transition",
    "record_attempt",
    "update_turn_state",
]
