"""Experiments: designs stored whole with their rooms, read, listed, updated, deleted."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, delete, func, insert, update
from sqlalchemy import select as sa_select
from sqlmodel import col, select

from storage.checks import UNSET, _Unset, as_set, check_limit, check_name, json_object, require_in
from storage.database import Database
from storage.database.statements import add_row, get_row
from storage.errors import (
    ExperimentNotFound,
    RecordInUse,
    StorageValueError,
)
from storage.rooms.listing import room_ids
from storage.rooms.log import check_event_fields
from storage.rooms.room import live_leases, new_room_values
from storage.rooms.rows import INSERT_EVENT, event_row, insert_event
from storage.tables import Analysis, Event, Experiment, Room
from vocabulary import EXPERIMENT_STATUSES, ExperimentStatus, RoomStatus

EXPERIMENTS = Experiment.__table__  # type: ignore[attr-defined]
ROOMS = Room.__table__  # type: ignore[attr-defined]
ANALYSES = Analysis.__table__  # type: ignore[attr-defined]
EVENTS = Event.__table__  # type: ignore[attr-defined]


# --- experiments -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ExperimentRoom:
    """One planned room of an experiment, known by its ``(condition, replicate)``: its name, its
    config, and the opening message that starts it (posted by ``speaker`` with ``request_id``)."""

    name: str
    config: dict[str, Any]
    condition: str
    replicate: int
    opening: str
    speaker: str
    request_id: str


def create_experiment(
    db: Database,
    name: str,
    config: dict[str, Any] | None = None,
    *,
    status: str = "draft",
    rooms: Sequence[ExperimentRoom] = (),
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Store an experiment design (template x variations x replicates) and return its id.

    ``config`` is strict, secret-free JSON (:class:`ConfigContainsSecret`). Every room is checked
    before anything is written: a refused design (any room's config, name or opening) leaves no
    experiment row and no room behind. The rooms are then created and started in batches of
    ``CREATE_BATCH`` (one write transaction each, the first with the experiment's row), so other
    writers wait for one batch, never for a whole design of 10,000 rooms; ``progress(created,
    total)`` after each. A process that dies halfway leaves an experiment whose missing rooms
    :func:`add_experiment_rooms` creates (the worker's and the pages' catch-up call it).
    """
    check_name(name, "name")
    config = json_object({} if config is None else config, "config")
    require_in(status, EXPERIMENT_STATUSES, "status")
    checked = _checked_rooms(db, rooms)
    now = db.now()
    with db.write() as session:
        experiment = Experiment(
            name=name, config=config, status=status, created_at=now, updated_at=now
        )
        experiment_id = add_row(session, experiment)
        _insert_rooms(session.connection(), experiment_id, checked[:CREATE_BATCH], now)
    for start in range(CREATE_BATCH, len(checked), CREATE_BATCH):
        if progress is not None:
            progress(start, len(checked))
        _add_checked(db, experiment_id, checked[start : start + CREATE_BATCH])
    if progress is not None:
        progress(len(checked), len(checked))
    return experiment_id


#: Rooms created per write transaction by :func:`create_experiment`.
CREATE_BATCH = 1000


def add_experiment_rooms(db: Database, experiment_id: int, rooms: Sequence[ExperimentRoom]) -> int:
    """Create the experiment's planned rooms that do not exist yet, each with its opening, in one
    write transaction, and post the opening of any existing room that never got one (an ``idle``
    room left by a crash of an older version). Idempotent and safe to run from several processes
    at once: the experiment's row is locked first, so a room is never created twice. Returns how
    many rooms were created."""
    return _add_checked(db, experiment_id, _checked_rooms(db, rooms))


def _add_checked(
    db: Database, experiment_id: int, checked: Sequence[tuple[ExperimentRoom, dict[str, Any]]]
) -> int:
    now = db.now()
    with db.write_connection() as conn:
        locked = conn.execute(
            sa_select(EXPERIMENTS.c.id).where(EXPERIMENTS.c.id == experiment_id).with_for_update()
        ).scalar()
        if locked is None:
            raise ExperimentNotFound(f"experiment {experiment_id} does not exist")
        existing = {
            (row.condition, row.replicate): (row.id, row.status)
            for row in conn.execute(
                sa_select(ROOMS.c.id, ROOMS.c.condition, ROOMS.c.replicate, ROOMS.c.status).where(
                    ROOMS.c.experiment_id == experiment_id
                )
            )
        }
        missing = [r for r in checked if (r[0].condition, r[0].replicate) not in existing]
        for room, _ in checked:
            found = existing.get((room.condition, room.replicate))
            if found is not None and found[1] == RoomStatus.IDLE:
                _post_opening(conn, found[0], room, now)
        _insert_rooms(conn, experiment_id, missing, now)
        conn.execute(
            update(EXPERIMENTS).where(EXPERIMENTS.c.id == experiment_id).values(updated_at=now)
        )
        return len(missing)


def _checked_rooms(
    db: Database, rooms: Sequence[ExperimentRoom]
) -> list[tuple[ExperimentRoom, dict[str, Any]]]:
    """Every room checked (:func:`_checked_room`). The replicates of one condition share their
    config's values (only the seed differs: ``planned_experiment_rooms``), so a config whose
    values are the very objects already checked is not walked again: the check of a design of
    10,000 rooms costs one walk per condition (it was 60% of creating one)."""
    seen: set[tuple[tuple[str, int], ...]] = set()
    return [_checked_room(db, room, seen) for room in rooms]


def _checked_room(
    db: Database, room: ExperimentRoom, seen: set[tuple[tuple[str, int], ...]] | None = None
) -> tuple[ExperimentRoom, dict[str, Any]]:
    config = room.config
    seed = config.get("seed") if isinstance(config, dict) else None
    shape = (
        tuple((k, id(v)) for k, v in config.items() if k != "seed")
        if isinstance(config, dict) and (seed is None or type(seed) is int)
        else None
    )
    if seen is not None and shape is not None and shape in seen:
        values = new_room_values(db, room.name, {}, status="running")
        values["config"] = config  # the same values as a checked config, and a plain int seed
    else:
        values = new_room_values(db, room.name, config, status="running")
        if seen is not None and shape is not None:
            seen.add(shape)
    check_event_fields(speaker=room.speaker, content=room.opening, request_id=room.request_id)
    if not room.opening.strip():
        raise StorageValueError(f"room {room.name!r}: the opening message is empty")
    return room, values


def _insert_rooms(
    conn: Any, experiment_id: int, rooms: Sequence[tuple[ExperimentRoom, dict[str, Any]]], now: Any
) -> None:
    """Insert rooms with their openings: one batched insert of the rooms (ids returned in
    order), one of the openings, per ``_INSERT_BATCH`` rooms (not a statement per room)."""
    for start in range(0, len(rooms), _INSERT_BATCH):
        chunk = rooms[start : start + _INSERT_BATCH]
        values = [
            {
                **room_values,
                "experiment_id": experiment_id,
                "condition": room.condition,
                "replicate": room.replicate,
            }
            for room, room_values in chunk
        ]
        # RETURNING without a promised order (SQLite would then insert row by row): the rows
        # are matched by (condition, replicate), unique within an experiment.
        ids = {(r.condition, r.replicate): r.id for r in conn.execute(_INSERT_ROOMS, values)}
        openings = [
            _opening_row(ids[(room.condition, room.replicate)], room, now) for room, _ in chunk
        ]
        conn.execute(INSERT_EVENT, openings)


_INSERT_BATCH = 1000
_INSERT_ROOMS = insert(ROOMS).returning(ROOMS.c.id, ROOMS.c.condition, ROOMS.c.replicate)


def _opening_row(room_id: int, room: ExperimentRoom, now: Any) -> dict[str, Any]:
    """The room's opening message (it opens activity 1)."""
    return event_row(
        room_id,
        1,
        kind="human",
        speaker=room.speaker,
        content=room.opening,
        activity=1,
        request_id=room.request_id,
        now=now,
    )


def _post_opening(conn: Any, room_id: int, room: ExperimentRoom, now: Any) -> None:
    """The room's opening message, and the room running (an ``idle`` room left by a crash)."""
    insert_event(conn, _opening_row(room_id, room, now))
    conn.execute(
        update(ROOMS).where(ROOMS.c.id == room_id).values(status="running", updated_at=now)
    )


def get_experiment(db: Database, experiment_id: int) -> Experiment:
    """One experiment. Raises :class:`ExperimentNotFound`."""
    row: Experiment = get_row(db, Experiment, experiment_id, ExperimentNotFound, "experiment")
    return row


def list_experiments(
    db: Database,
    *,
    status: str | Collection[str] | None = None,
    archived: bool | None = None,
    limit: int | None = 100,
    offset: int = 0,
) -> list[Experiment]:
    """Experiments, newest first. ``archived``: ``False`` only those not archived, ``True``
    only archived ones, ``None`` (default) both."""
    check_limit(limit, offset)
    query = select(Experiment).order_by(col(Experiment.id).desc()).offset(offset)
    statuses = as_set(status)
    if statuses is not None:
        query = query.where(col(Experiment.status).in_(sorted(statuses)))
    if archived is not None:
        column = col(Experiment.archived_at)
        query = query.where(column.is_not(None) if archived else column.is_(None))
    if limit is not None:
        query = query.limit(limit)
    with db.read() as session:
        return list(session.exec(query))


def set_experiment_archived(db: Database, experiment_id: int, archived: bool = True) -> Experiment:
    """Archive an experiment (hidden from the pickers unless asked for) or bring it back; its
    rooms are archived (or brought back) with it. Nothing else changes. Raises
    :class:`ExperimentNotFound`."""
    now = db.now()
    stamp = now if archived else None
    with db.write() as session:
        experiment = session.exec(
            select(Experiment).where(Experiment.id == experiment_id).with_for_update()
        ).first()
        if experiment is None:
            raise ExperimentNotFound(f"experiment {experiment_id} does not exist")
        experiment.archived_at = stamp
        session.exec(
            update(ROOMS).where(ROOMS.c.experiment_id == experiment_id).values(archived_at=stamp)
        )
        session.flush()
        session.refresh(experiment)
        return experiment


def update_experiment(
    db: Database,
    experiment_id: int,
    *,
    name: str | _Unset = UNSET,
    config: dict[str, Any] | _Unset = UNSET,
    status: str | _Unset = UNSET,
    expected_status: str | Collection[str] | None = None,
) -> Experiment | None:
    """Change the given fields; ``None`` when ``expected_status`` is given and does not match."""
    if not isinstance(name, _Unset):
        check_name(name, "name")
    if not isinstance(config, _Unset):
        json_object(config, "config")
    if not isinstance(status, _Unset):
        require_in(status, EXPERIMENT_STATUSES, "status")
    expected = as_set(expected_status)
    with db.write() as session:
        experiment = session.exec(
            select(Experiment).where(Experiment.id == experiment_id).with_for_update()
        ).first()
        if experiment is None:
            raise ExperimentNotFound(f"experiment {experiment_id} does not exist")
        if expected is not None and experiment.status not in expected:
            return None
        if not isinstance(name, _Unset):
            experiment.name = name
        if not isinstance(config, _Unset):
            experiment.config = config
        if not isinstance(status, _Unset):
            experiment.status = status
        experiment.updated_at = db.now()
        return experiment


def experiment_room_ids(
    db: Database, experiment_id: int, *, statuses: Collection[str] | None = None
) -> list[int]:
    """Ids of the experiment's rooms (only those in ``statuses`` when given), in id order."""
    return room_ids(db, experiment_id=experiment_id, status=statuses)


def experiment_status_counts(db: Database, experiment_id: int) -> dict[str, int]:
    """``{status: rooms}`` of the experiment's rooms (statuses no room has are left out): one
    grouped count over the experiment's rooms (``ix_rooms_experiment``)."""
    query = (
        sa_select(ROOMS.c.status, func.count())
        .where(ROOMS.c.experiment_id == experiment_id)
        .group_by(ROOMS.c.status)
    )
    with db.read_connection() as conn:
        return {str(status): int(n) for status, n in conn.execute(query)}


def experiment_spend(
    db: Database, experiment_id: int, *, excluding_room: int | None = None
) -> tuple[int, float, int, int]:
    """``(tokens, dollars, unpriced calls, estimated calls)`` recorded on the events of the
    experiment's rooms (tokens: input + output; dollars: the known costs; unpriced: calls with
    tokens and no known cost; estimated: calls whose token counts are estimates, the server
    having reported none: ``data.usage_estimated``), optionally leaving one room out: one
    aggregate query
    (rooms by ``ix_rooms_experiment``, their events by ``uq_events_room_seq``), run before a
    budgeted experiment's turns start."""
    rooms = sa_select(ROOMS.c.id).where(ROOMS.c.experiment_id == experiment_id)
    if excluding_room is not None:
        rooms = rooms.where(ROOMS.c.id != excluding_room)
    return _spend(db, EVENTS.c.room_id.in_(rooms.scalar_subquery()))


def room_spend(db: Database, room_id: int) -> tuple[int, float, int, int]:
    """``(tokens, dollars, unpriced calls, estimated calls)`` recorded on one room's events (see
    :func:`experiment_spend`)."""
    return _spend(db, EVENTS.c.room_id == room_id)


def _spend(db: Database, where: Any) -> tuple[int, float, int, int]:
    estimated = EVENTS.c.data["usage_estimated"].as_boolean()
    query = sa_select(
        func.coalesce(func.sum(EVENTS.c.input_tokens), 0),
        func.coalesce(func.sum(EVENTS.c.output_tokens), 0),
        func.coalesce(func.sum(EVENTS.c.cost), 0.0),
        func.coalesce(func.sum(case((unpriced_call(EVENTS), 1), else_=0)), 0),
        func.coalesce(func.sum(case((estimated.is_(True), 1), else_=0)), 0),
    ).where(where)
    with db.read_connection() as conn:
        row = conn.execute(query).one()
    return int(row[0]) + int(row[1]), float(row[2]), int(row[3]), int(row[4])


def unpriced_call(events: Any) -> Any:
    """An event recording a model call (tokens) whose price is unknown (``cost`` NULL)."""
    return and_(
        events.c.cost.is_(None),
        func.coalesce(events.c.input_tokens, 0) + func.coalesce(events.c.output_tokens, 0) > 0,
    )


def delete_experiment(db: Database, experiment_id: int, *, with_rooms: bool = False) -> bool:
    """Delete an experiment. ``False`` if it did not exist.

    ``with_rooms=False``: its rooms stay (their ``experiment_id`` becomes NULL), and so do its
    analyses (their ``experiment_id`` becomes NULL). ``with_rooms=True``: its rooms go too, each
    with its events, lease and analysis answers, and so do the experiment's analyses; refused
    with :class:`RecordInUse` (nothing deleted) while the experiment is ``running`` (a worker
    would create its missing rooms again) or a worker holds a live lease on one of its rooms.
    One transaction: all or nothing.
    """
    now = db.now()
    with db.write() as session:
        conn = session.connection()
        status = conn.execute(
            sa_select(EXPERIMENTS.c.status)
            .where(EXPERIMENTS.c.id == experiment_id)
            .with_for_update()
        ).scalar()
        if status is None:
            return False
        if with_rooms:
            if status == ExperimentStatus.RUNNING:
                raise RecordInUse(
                    f"experiment {experiment_id} is running: stop it first, then delete it"
                )
            room_ids = list(
                conn.execute(
                    sa_select(ROOMS.c.id).where(ROOMS.c.experiment_id == experiment_id)
                ).scalars()
            )
            busy = live_leases(conn, room_ids, now)
            if busy:
                raise RecordInUse(
                    f"experiment {experiment_id}: a worker still runs room(s) "
                    f"{', '.join(map(str, busy[:5]))}; try again once their leases are released"
                )
            conn.execute(delete(ANALYSES).where(ANALYSES.c.experiment_id == experiment_id))
            conn.execute(delete(ROOMS).where(ROOMS.c.experiment_id == experiment_id))
        result = conn.execute(delete(EXPERIMENTS).where(EXPERIMENTS.c.id == experiment_id))
        return bool(result.rowcount)


__all__ = [
    "experiment_room_ids",
    "experiment_status_counts",
    "ExperimentRoom",
    "add_experiment_rooms",
    "create_experiment",
    "delete_experiment",
    "experiment_spend",
    "get_experiment",
    "list_experiments",
    "set_experiment_archived",
    "room_spend",
    "update_experiment",
]
