"""A study's groups: one group per room, formed from the lobby in one transaction (its room,
its row, its people seated with an ``assigned`` event each), listed, counted, and changed under
its lock."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from storage.checks import UNSET, _Unset, json_object
from storage.database import Database
from storage.errors import RecordNotFound
from storage.experiments.experiments import ExperimentRoom, _checked_room, _insert_rooms
from storage.studies.participants import apply_fields, check_move
from storage.studies.study import locked_study
from storage.studies.study_log import StudyNote, note_on, write_note
from storage.tables import Room, StudyGroup, StudyParticipant
from vocabulary import GroupStatus, ParticipantStage, StudyEventKind


def form_group(
    db: Database,
    study_id: int,
    *,
    room: ExperimentRoom,
    seats: Mapping[str, int | str],
    assignment: Mapping[str, Any],
    expected_stage: str = ParticipantStage.LOBBY,
    notes: Sequence[StudyNote] = (),
) -> StudyGroup | None:
    """Form a group in one transaction: its room (with its opening, running), the group row,
    each participant of ``seats`` (``{seat: participant id or "agent"}``) moved to ``room`` and
    an ``assigned`` event each, and ``notes`` (the seats filled with agents) with the group's
    id. ``None`` (nothing written) when one of them is no longer at ``expected_stage`` or the
    group number of that condition is taken (another tick won)."""
    check_move(expected_stage, ParticipantStage.ROOM)
    checked = _checked_room(db, room)
    people = {seat: pid for seat, pid in seats.items() if isinstance(pid, int)}
    now = db.now()
    with db.write() as session:
        study = locked_study(session, study_id)
        taken = session.exec(
            select(StudyGroup.id).where(
                StudyGroup.study_id == study_id,
                StudyGroup.condition == room.condition,
                StudyGroup.number == room.replicate,
            )
        ).first()
        rows = session.exec(
            select(StudyParticipant).where(col(StudyParticipant.id).in_(sorted(people.values())))
        ).all()
        if taken is not None or len(rows) != len(people):
            return None
        if any(p.stage != expected_stage or p.group_id is not None for p in rows):
            return None
        conn = session.connection()
        _insert_rooms(conn, int(study.experiment_id or 0), [checked], now)
        room_id = session.exec(
            select(Room.id).where(
                Room.experiment_id == study.experiment_id,
                Room.condition == room.condition,
                Room.replicate == room.replicate,
            )
        ).one()
        group = StudyGroup(
            study_id=study_id,
            condition=room.condition,
            number=room.replicate,
            room_id=room_id,
            seats=dict(seats),
            assignment=json_object(dict(assignment), "assignment"),
            started_at=now,
        )
        session.add(group)
        session.flush()
        _seat_people(session, study, group, {p.id: p for p in rows}, people, assignment, now)
        for note in notes:
            write_note(conn, study_id, replace(note, group_id=group.id), now)
        return group


def _seat_people(
    session: Any,
    study: Any,
    group: StudyGroup,
    by_id: Mapping[Any, StudyParticipant],
    people: Mapping[str, int],
    assignment: Mapping[str, Any],
    now: datetime,
) -> None:
    """:func:`form_group`'s participants moved into ``group``'s room, each with its ``assigned``
    event (inside the caller's transaction)."""
    for seat, pid in people.items():
        person = by_id[pid]
        apply_fields(
            person,
            {
                "stage": ParticipantStage.ROOM,
                "group_id": group.id,
                "seat": seat,
                "condition": group.condition,
                "assigned_at": now,
                "version": study.version,
            },
            now,
        )
        session.add(person)
    session.flush()
    for seat, pid in people.items():
        note_on(
            session.connection(),
            int(study.id),
            StudyEventKind.ASSIGNED,
            now,
            participant_id=pid,
            group_id=group.id,
            data={"condition": group.condition, "seat": seat, **assignment},
        )


def list_groups(db: Database, study_id: int, *, status: str | None = None) -> list[StudyGroup]:
    """A study's groups (of ``status``), in the order they were formed."""
    query = select(StudyGroup).where(StudyGroup.study_id == study_id)
    if status is not None:
        query = query.where(StudyGroup.status == status)
    with db.read() as session:
        return list(session.exec(query.order_by(col(StudyGroup.id))))


def get_group(db: Database, group_id: int) -> StudyGroup:
    """A group by id. Raises ``RecordNotFound``."""
    with db.read() as session:
        group = session.get(StudyGroup, group_id)
    if group is None:
        raise RecordNotFound(f"study group {group_id} does not exist")
    return group


def group_of_room(db: Database, room_id: int) -> StudyGroup | None:
    """The study group whose conversation room ``room_id`` is (None: not a study's room)."""
    with db.read() as session:
        return session.exec(select(StudyGroup).where(StudyGroup.room_id == room_id)).first()


def update_group(
    db: Database,
    group_id: int,
    *,
    expected_status: str | None = None,
    seat_changes: Mapping[str, Any] | None = None,
    status: str | _Unset = UNSET,
    ended_at: datetime | None | _Unset = UNSET,
) -> StudyGroup | None:
    """Change a group (``seat_changes``: ``{seat: holder}`` merged into its seats under the
    lock); ``None`` (nothing changed) when its status is not ``expected_status``."""
    with db.write() as session:
        group = session.exec(
            select(StudyGroup).where(StudyGroup.id == group_id).with_for_update()
        ).first()
        if group is None:
            raise RecordNotFound(f"study group {group_id} does not exist")
        if expected_status is not None and group.status != expected_status:
            return None
        if seat_changes:
            group.seats = {**group.seats, **seat_changes}
        if not isinstance(status, _Unset):
            group.status = status
        if not isinstance(ended_at, _Unset):
            group.ended_at = ended_at
        session.add(group)
        return group


def running_groups(db: Database, study_id: int) -> list[tuple[StudyGroup, str, str | None]]:
    """The study's running groups with their room's status and stop reason (one query)."""
    with db.read() as session:
        rows = session.exec(
            select(StudyGroup, Room.status, Room.stop_reason)
            .join(Room, col(Room.id) == col(StudyGroup.room_id))
            .where(StudyGroup.study_id == study_id, StudyGroup.status == GroupStatus.RUNNING)
            .order_by(col(StudyGroup.id))
        ).all()
    return [(group, str(status), reason) for group, status, reason in rows]


def group_numbers(db: Database, study_id: int) -> dict[str, int]:
    """How many groups each condition has so far."""
    with db.read() as session:
        rows = session.exec(
            select(StudyGroup.condition, func.count())
            .where(StudyGroup.study_id == study_id)
            .group_by(StudyGroup.condition)
        ).all()
    return {str(condition): int(n) for condition, n in rows}


__all__ = [
    "form_group",
    "get_group",
    "group_of_room",
    "group_numbers",
    "list_groups",
    "running_groups",
    "update_group",
]
