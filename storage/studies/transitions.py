"""A study's transitions, each one write transaction: nobody sees half of one.

- :func:`leave`: a participant leaves (absent, removed, their turn given to an agent) and, when
  they held a seat of a running group, the study's rule for that seat is applied with it: the
  seat's new holder, the rule's event in the study's log, and what the rule does to the room
  (paused, stopped, or a stand-in agent joining its roster as a new settings version). Before
  this, a dropout, its seat rule and its event were three writes.
- :func:`end_group`: a group's conversation ends (the room failed or was stopped, the time limit,
  the researcher): the group ``ended``, its room stopped when it still runs, the ``room_ended``
  event, and each of its people moved on (the post-survey, or an exit) in the same write.
- :func:`record_study_notes`: several entries of the study's log at once (a turn timeout and its
  nudge).

What a transition does to a room is a :data:`RoomMove` (:class:`PauseRoom`, :class:`StopRoom`,
:class:`ChangeRoster`), built above storage from the room's own rules and written here with the
room's own write helpers (``rooms.room.stop_rooms_on`` and ``pause_on``, ``config_versions``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Connection
from sqlmodel import select

from storage.database import Database
from storage.errors import RecordNotFound
from storage.rooms.config_versions import _change_on, _checked_change
from storage.rooms.room import check_room_move, pause_on, stop_rooms_on
from storage.rooms.rows import ROOMS, lock_room
from storage.studies.participants import ParticipantMove, places_taken
from storage.studies.study import locked_study
from storage.studies.study_log import StudyNote, write_note
from storage.tables import StudyGroup, StudyParticipant
from vocabulary import GroupStatus, ParticipantStage, StudyEventKind


@dataclass(frozen=True, slots=True)
class PauseRoom:
    """Pause the room (when its status is one of ``allowed``), with its notice."""

    room_id: int
    allowed: Collection[str]
    notice: str
    notice_data: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_room_move(self.notice, self.notice_data, self.allowed)

    def apply(self, conn: Connection, now: datetime) -> bool:
        return pause_on(conn, self.room_id, self.allowed, self.notice, self.notice_data, now)


@dataclass(frozen=True, slots=True)
class StopRoom:
    """Stop the room and its open turn (when its status is one of ``allowed``), with its
    notice."""

    room_id: int
    reason: str
    allowed: Collection[str]
    notice: str
    notice_data: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_room_move(self.notice, self.notice_data, self.allowed)

    def apply(self, conn: Connection, now: datetime) -> bool:
        stopped = stop_rooms_on(
            conn, [self.room_id], self.reason, self.allowed, self.notice, self.notice_data, now
        )
        return bool(stopped)


class _Stale(Exception):
    """A room's settings changed since a transition was planned from them: nothing is written
    (the next tick plans again from the new settings)."""


@dataclass(frozen=True, slots=True)
class ChangeRoster:
    """Make ``config`` the room's settings (a new version with its ``config_changed`` notice):
    a seat's stand-in agent joins the roster. Planned from the room's settings ``base``: when
    they changed meanwhile (two seats taken at once), the whole transition is refused."""

    room_id: int
    base: dict[str, Any]
    config: dict[str, Any]
    by: str | None
    changes: Sequence[str]
    notice: str
    names: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        names = _checked_change(self.config, self.by, self.changes, self.notice)
        object.__setattr__(self, "names", names)

    def apply(self, conn: Connection, now: datetime) -> bool:
        lock_room(conn, self.room_id)
        current = conn.execute(sa_select(ROOMS.c.config).where(ROOMS.c.id == self.room_id)).scalar()
        if current != self.base:
            raise _Stale(self.room_id)
        _change_on(conn, self.room_id, self.config, self.by, self.names, self.notice, now)
        return True


RoomMove = PauseRoom | StopRoom | ChangeRoster
"""What a study's transition does to a group's room."""


@dataclass(frozen=True, slots=True)
class SeatRule:
    """The study's rule applied to a seat its person left: the seat's new ``holder`` (an agent,
    or left empty), the rule's entry in the study's log, and what it does to the room."""

    group_id: int
    seat: str
    holder: str
    note: StudyNote
    room: RoomMove | None = None


def exit_participant(
    db: Database,
    move: ParticipantMove,
    seat: SeatRule | None = None,
    *,
    notes: Sequence[StudyNote] = (),
) -> bool:
    """One write: the participant's ``move`` (when they are still at an expected stage) and,
    when ``seat`` names a group still running, the seat's rule (its holder, its note, its room
    move; a room that ended meanwhile is left as it is), and ``notes``. ``False``: nothing was
    written (the participant had moved on: another tick, another tab)."""
    now = db.now()
    try:
        return _exit_participant(db, move, seat, notes, now)
    except _Stale:
        return False


def _exit_participant(
    db: Database,
    move: ParticipantMove,
    seat: SeatRule | None,
    notes: Sequence[StudyNote],
    now: datetime,
) -> bool:
    with db.write() as session:
        # Locks in one order everywhere (the group, then its people: ``end_group`` too), so
        # two transitions of one group never deadlock on PostgreSQL.
        group = _locked_group(session, seat.group_id) if seat is not None else None
        person = move.apply(session, now)
        if person is None:
            return False
        conn = session.connection()
        if seat is not None and group is not None and group.status == GroupStatus.RUNNING:
            group.seats = {**group.seats, seat.seat: seat.holder}
            session.add(group)
            session.flush()
            if seat.room is not None:
                seat.room.apply(conn, now)
            write_note(conn, group.study_id, seat.note, now)
        for note in notes:
            write_note(conn, person.study_id, note, now)
        return True


def consent_within_cap(
    db: Database,
    study_id: int,
    cap: int | None,
    *,
    consent: ParticipantMove,
    full: ParticipantMove,
) -> bool | None:
    """One write under the study's lock: ``consent`` when a place is left (``cap`` None, or
    fewer than ``cap`` people consented), else ``full`` (the person is told the study filled
    up meanwhile). True: consented; False: full; None: nothing written (they had moved on)."""
    now = db.now()
    with db.write() as session:
        locked_study(session, study_id)
        if cap is None or places_taken(session, study_id) < cap:
            return None if consent.apply(session, now) is None else True
        return None if full.apply(session, now) is None else False


def end_group(
    db: Database,
    group_id: int,
    *,
    reason: str,
    moves: Sequence[ParticipantMove],
    room: StopRoom | None = None,
    data: Mapping[str, Any] | None = None,
    only_if_empty: bool = False,
    notes: Sequence[StudyNote] = (),
) -> bool:
    """One write: the group ``running`` -> ``ended`` (``ended_at``), its room stopped
    (``room``, when the conversation still ran: the time limit, the researcher), ``notes``
    (what ended it: an idle room, say), the ``room_ended`` event with ``reason``, and each of
    ``moves`` (its people on to the post-survey, or out). ``False``: nothing written (another tick ended it, or with
    ``only_if_empty`` someone is in its room: a group read as empty by a process that read
    its people before another seated them)."""
    now = db.now()
    with db.write() as session:
        group = _locked_group(session, group_id)
        if group.status != GroupStatus.RUNNING:
            return False
        if only_if_empty and _members_in_room(session, group_id):
            return False
        group.status, group.ended_at = GroupStatus.ENDED, now
        session.add(group)
        session.flush()
        conn = session.connection()
        if room is not None:
            room.apply(conn, now)
        for note in notes:
            write_note(conn, group.study_id, note, now)
        ended = StudyNote(
            StudyEventKind.ROOM_ENDED, {"reason": reason, **(data or {})}, None, group_id
        )
        write_note(conn, group.study_id, ended, now)
        for move in moves:
            move.apply(session, now)
        return True


def record_study_notes(db: Database, study_id: int, notes: Sequence[StudyNote]) -> None:
    """Several entries of the study's log in one write."""
    now = db.now()
    with db.write_connection() as conn:
        for note in notes:
            write_note(conn, study_id, note, now)


def _members_in_room(session: Any, group_id: int) -> int:
    query = select(func.count()).select_from(StudyParticipant)
    return int(
        session.exec(
            query.where(
                StudyParticipant.group_id == group_id,
                StudyParticipant.stage == ParticipantStage.ROOM,
            )
        ).one()
    )


def _locked_group(session: Any, group_id: int) -> StudyGroup:
    group = session.exec(
        select(StudyGroup).where(StudyGroup.id == group_id).with_for_update()
    ).first()
    if group is None:
        raise RecordNotFound(f"study group {group_id} does not exist")
    return group  # type: ignore[no-any-return]


__all__ = [
    "ChangeRoster",
    "consent_within_cap",
    "PauseRoom",
    "RoomMove",
    "SeatRule",
    "StopRoom",
    "end_group",
    "exit_participant",
    "record_study_notes",
]
