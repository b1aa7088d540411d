"""Experiments and the agent library (agent profiles): create, read, list, update, delete."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, update
from sqlalchemy import select as sa_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from storage._tx import (
    UNSET,
    _Unset,
    add_row,
    as_set,
    check_json,
    check_limit,
    check_name,
    get_row,
    require_in,
)
from storage.database import Database
from storage.errors import (
    AgentProfileNotFound,
    DuplicateName,
    ExperimentNotFound,
    StorageValueError,
)
from storage.secret_guard import check_no_secrets
from storage.tables import AgentProfile, Experiment, Room
from storage.vocabulary import EXPERIMENT_STATUSES

EXPERIMENTS = Experiment.__table__  # type: ignore[attr-defined]
ROOMS = Room.__table__  # type: ignore[attr-defined]

AGENT_NAME_MAX = 100


def _json_object(value: Any, field: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, dict):
        raise StorageValueError(
            f"{field} must be a dict (a JSON object), not {type(value).__name__}"
        )
    check_json(value, field)
    check_no_secrets(value, field=field)
    return value


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
) -> int:
    """Store an experiment design (template x variations x replicates) and return its id.

    ``config`` is strict, secret-free JSON (:class:`ConfigContainsSecret`). ``rooms`` are created
    and started in the same transaction: a refused design (any room's config, name or opening)
    leaves no experiment row and no room behind.
    """
    check_name(name, "name")
    config = _json_object({} if config is None else config, "config")
    require_in(status, EXPERIMENT_STATUSES, "status")
    checked = [_checked_room(db, room) for room in rooms]
    now = db.now()
    with db.write() as session:
        experiment = Experiment(
            name=name, config=config, status=status, created_at=now, updated_at=now
        )
        experiment_id = add_row(session, experiment)
        _insert_rooms(session.connection(), experiment_id, checked, now)
        return experiment_id


def add_experiment_rooms(db: Database, experiment_id: int, rooms: Sequence[ExperimentRoom]) -> int:
    """Create the experiment's planned rooms that do not exist yet, each with its opening, in one
    write transaction, and post the opening of any existing room that never got one (an ``idle``
    room left by a crash of an older version). Idempotent and safe to run from several processes
    at once: the experiment's row is locked first, so a room is never created twice. Returns how
    many rooms were created."""
    checked = [_checked_room(db, room) for room in rooms]
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
            if found is not None and found[1] == "idle":
                _post_opening(conn, found[0], room, now)
        _insert_rooms(conn, experiment_id, missing, now)
        conn.execute(
            update(EXPERIMENTS).where(EXPERIMENTS.c.id == experiment_id).values(updated_at=now)
        )
        return len(missing)


def _checked_room(db: Database, room: ExperimentRoom) -> tuple[ExperimentRoom, dict[str, Any]]:
    from storage.events import check_event_fields
    from storage.rooms import new_room_values

    values = new_room_values(db, room.name, room.config, status="running")
    check_event_fields(speaker=room.speaker, content=room.opening, request_id=room.request_id)
    if not room.opening.strip():
        raise StorageValueError(f"room {room.name!r}: the opening message is empty")
    return room, values


def _insert_rooms(
    conn: Any, experiment_id: int, rooms: Sequence[tuple[ExperimentRoom, dict[str, Any]]], now: Any
) -> None:
    for room, values in rooms:
        room_id = conn.execute(
            insert(ROOMS).returning(ROOMS.c.id),
            {
                **values,
                "experiment_id": experiment_id,
                "condition": room.condition,
                "replicate": room.replicate,
            },
        ).scalar_one()
        _post_opening(conn, room_id, room, now, set_running=False)


def _post_opening(
    conn: Any, room_id: int, room: ExperimentRoom, now: Any, *, set_running: bool = True
) -> None:
    """The room's opening message (it opens activity 1), and the room running."""
    from storage._tx import insert_event, word_count

    insert_event(
        conn,
        {
            "room_id": room_id,
            "seq": 1,
            "activity": 1,
            "round": 0,
            "kind": "human",
            "speaker": room.speaker,
            "content": room.opening,
            "words": word_count(room.opening),
            "state": None,
            "request_id": room.request_id,
            "parent_event_id": None,
            "model": None,
            "visible_to": None,
            "data": None,
            "attempts": 0,
            "created_at": now,
            "updated_at": now,
        },
    )
    if set_running:
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
    limit: int | None = 100,
    offset: int = 0,
) -> list[Experiment]:
    """Experiments, newest first."""
    check_limit(limit, offset)
    query = select(Experiment).order_by(col(Experiment.id).desc()).offset(offset)
    statuses = as_set(status)
    if statuses is not None:
        query = query.where(col(Experiment.status).in_(sorted(statuses)))
    if limit is not None:
        query = query.limit(limit)
    with db.read() as session:
        return list(session.exec(query))


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
        _json_object(config, "config")
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


def delete_experiment(db: Database, experiment_id: int) -> bool:
    """Delete an experiment; its rooms stay (their ``experiment_id`` becomes NULL)."""
    with db.write() as session:
        result = session.exec(delete(Experiment).where(col(Experiment.id) == experiment_id))
        return bool(result.rowcount)


# --- agent profiles ----------------------------------------------------------------------------


def _check_profile(name: str | _Unset, traits: Any, instruction: Any, model: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if not isinstance(name, _Unset):
        values["name"] = check_name(name, "name", max_length=AGENT_NAME_MAX)
    if not isinstance(traits, _Unset):
        traits = _json_object(traits, "traits")
        bad = [key for key in traits if not isinstance(key, str) or not key.strip()]
        if bad:
            raise StorageValueError(f"traits keys must be non-empty strings; got {bad!r}")
        values["traits"] = traits
    if not isinstance(instruction, _Unset):
        if not isinstance(instruction, str):
            raise StorageValueError(
                f"instruction must be a string, not {type(instruction).__name__}"
            )
        values["instruction"] = instruction
    if not isinstance(model, _Unset):
        values["model"] = _json_object(model, "model", optional=True)
    return values


def create_agent_profile(
    db: Database,
    name: str,
    *,
    traits: dict[str, Any] | None = None,
    instruction: str = "",
    model: dict[str, Any] | None = None,
) -> int:
    """Add an agent to the library; return its id.

    ``name`` is unique (:class:`DuplicateName`), at most 100 characters, no control characters.
    ``traits`` and ``model`` (a model spec) are strict, secret-free JSON objects.
    """
    values = _check_profile(name, {} if traits is None else traits, instruction, model)
    now = db.now()
    try:
        with db.write() as session:
            if session.exec(select(AgentProfile.id).where(AgentProfile.name == name)).first():
                raise _duplicate(name)
            profile = AgentProfile(**values, created_at=now, updated_at=now)
            return add_row(session, profile)
    except IntegrityError:
        raise _duplicate(name) from None


def _duplicate(name: str) -> DuplicateName:
    return DuplicateName(
        f"an agent named {name!r} already exists; agent names must be unique (rename one)"
    )


def get_agent_profile(db: Database, id_or_name: int | str) -> AgentProfile:
    """One agent profile by id or by name. Raises :class:`AgentProfileNotFound`."""
    query = select(AgentProfile)
    if isinstance(id_or_name, str):
        query = query.where(AgentProfile.name == id_or_name)
    else:
        query = query.where(AgentProfile.id == id_or_name)
    with db.read() as session:
        profile = session.exec(query).first()
    if profile is None:
        raise AgentProfileNotFound(f"no agent profile {id_or_name!r}")
    return profile


def list_agent_profiles(db: Database) -> list[AgentProfile]:
    """Every agent profile, by name."""
    with db.read() as session:
        return list(session.exec(select(AgentProfile).order_by(col(AgentProfile.name))))


def update_agent_profile(
    db: Database,
    profile_id: int,
    *,
    name: str | _Unset = UNSET,
    traits: dict[str, Any] | _Unset = UNSET,
    instruction: str | _Unset = UNSET,
    model: dict[str, Any] | None | _Unset = UNSET,
) -> AgentProfile:
    """Change the given fields and return the profile (same checks as on create)."""
    values = _check_profile(name, traits, instruction, model)
    try:
        with db.write() as session:
            profile = session.get(AgentProfile, profile_id)
            if profile is None:
                raise AgentProfileNotFound(f"no agent profile {profile_id!r}")
            if "name" in values and values["name"] != profile.name:
                taken = session.exec(
                    select(AgentProfile.id).where(AgentProfile.name == values["name"])
                ).first()
                if taken is not None:
                    raise _duplicate(values["name"])
            for key, value in values.items():
                setattr(profile, key, value)
            profile.updated_at = db.now()
            return profile
    except IntegrityError:
        raise _duplicate(str(values.get("name"))) from None


def delete_agent_profile(db: Database, profile_id: int) -> bool:
    """Delete a profile from the library (rooms keep their own copy of agent specs)."""
    with db.write() as session:
        result = session.exec(delete(AgentProfile).where(col(AgentProfile.id) == profile_id))
        return bool(result.rowcount)


__all__ = [
    "create_agent_profile",
    "create_experiment",
    "delete_agent_profile",
    "delete_experiment",
    "get_agent_profile",
    "get_experiment",
    "list_agent_profiles",
    "list_experiments",
    "update_agent_profile",
    "update_experiment",
]
