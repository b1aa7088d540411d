"""The researcher's live view of a study, and their acts on one participant.

:func:`study_monitor` says where everyone is (consent, lobby, room, idle, done), which groups run
with who in each seat, and attrition by condition with a Wilson 95% interval.
:func:`remove_participant` sends a participant out with the ``removed`` code (their seat is
handled by the study's dropout rule); it needs the moderator role and is in the study's log with
who did it. (The help channel is ``study.help``.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import storage
from conversation.access.roles import Action, Actor, require, who
from conversation.rooms.boundary import translated
from conversation.study.clock.seats import leave
from conversation.study.help import unread_count
from conversation.study.record import Study, get_study, member, study_definition
from conversation.text.limits import MAX_STOP_REASON_CHARS, check_text
from conversation.vocabulary import (
    ACTIVE_STAGES,
    ExitStatus,
    ParticipantStage,
    StudyEventKind,
)

#: Where a participant is, for the monitor: their stage, or one of these.
IDLE = "idle"
DONE = "done"
HELP_KINDS = frozenset({StudyEventKind.HELP, StudyEventKind.HELP_READ})


@dataclass(frozen=True, slots=True)
class MonitorRow:
    participant_id: int
    pseudonym: str
    stage: str
    where: str  # consent, pre_survey, lobby, room, post_survey, idle or done
    condition: str | None
    seat: str | None
    room_id: int | None
    exit_status: str | None
    idle_seconds: float
    joined_at: datetime
    help_unread: int


@dataclass(frozen=True, slots=True)
class AttritionRow:
    condition: str
    assigned: int
    completed: int
    dropped: int
    rate: float | None  # dropped / assigned
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class GroupRow:
    group_id: int
    condition: str
    number: int
    room_id: int | None
    seats: dict[str, str]  # seat -> pseudonym, "agent" or "left"
    status: str


@dataclass(frozen=True, slots=True)
class Monitor:
    study: Study
    rows: list[MonitorRow]
    attrition: list[AttritionRow]
    groups: list[GroupRow]
    lobby: int
    in_rooms: int
    done: int


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float | None, float | None]:
    """The Wilson score interval of a proportion (None, None for n = 0)."""
    if n == 0:
        return None, None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def study_monitor(db: storage.Database, code: str, *, now: datetime | None = None) -> Monitor:
    """Where everyone is now (see the module docstring)."""
    study = get_study(db, code)
    definition = study_definition(db, study)
    now = now or db.now()
    people = storage.list_participants(db, study.id)
    groups = storage.list_groups(db, study.id)
    rooms = {g.id: g.room_id for g in groups}
    notes: dict[int | None, list[Any]] = {}
    for note in storage.study_events(db, study.id, kinds=HELP_KINDS):
        notes.setdefault(note.participant_id, []).append(note)
    idle_after = timedelta(seconds=2 * definition.model.participants.heartbeat_seconds)
    rows = []
    for p in people:
        idle = now - p.last_seen_at
        where = DONE if p.stage == ParticipantStage.EXIT else IDLE if idle > idle_after else p.stage
        rows.append(
            MonitorRow(
                int(p.id or 0),
                p.pseudonym,
                p.stage,
                where,
                p.condition,
                p.seat,
                rooms.get(p.group_id),
                p.exit_status,
                max(0.0, idle.total_seconds()),
                p.joined_at,
                unread_count(notes.get(p.id, [])),
            )
        )
    names = {p.id: p.pseudonym for p in people}
    return Monitor(
        study=study,
        rows=rows,
        attrition=attrition(people, [c.label for c in definition.conditions]),
        groups=[
            GroupRow(
                int(g.id or 0),
                g.condition,
                g.number,
                g.room_id,
                {
                    s: names.get(h, str(h)) if isinstance(h, int) else str(h)
                    for s, h in g.seats.items()
                },
                g.status,
            )
            for g in groups
        ],
        lobby=sum(p.stage == ParticipantStage.LOBBY for p in people),
        in_rooms=sum(p.stage == ParticipantStage.ROOM for p in people),
        done=sum(p.stage == ParticipantStage.EXIT for p in people),
    )


def attrition(people: list[Any], conditions: list[str]) -> list[AttritionRow]:
    """Per condition: people assigned, completed, dropped; the dropout rate with its interval."""
    rows = []
    for label in conditions:
        assigned = [p for p in people if p.condition == label]
        done = sum(p.exit_status == ExitStatus.COMPLETED for p in assigned)
        dropped = sum(p.exit_status == ExitStatus.DROPPED for p in assigned)
        low, high = wilson(dropped, len(assigned))
        rate = dropped / len(assigned) if assigned else None
        rows.append(AttritionRow(label, len(assigned), done, dropped, rate, low, high))
    return rows


def remove_participant(
    db: storage.Database,
    code: str,
    participant_id: int,
    *,
    reason: str = "",
    actor: Actor | None = None,
) -> bool:
    """Send a participant out with the ``removed`` code; their seat, if they held one in a
    running group, is handled by the study's dropout rule in the same write. False when they
    had already left."""
    require(actor, Action.CONTROL)
    study = get_study(db, code)
    definition = study_definition(db, study)
    check_text(reason, "reason", MAX_STOP_REASON_CHARS, empty=True)
    for _ in range(3):  # a person who moves on meanwhile (a tab, the clock) is read again
        person = member(db, study, participant_id)
        if person.stage not in ACTIVE_STAGES:
            return False
        stage = ParticipantStage(person.stage)
        group = None
        if stage == ParticipantStage.ROOM and person.group_id is not None:
            with translated():
                group = storage.get_group(db, int(person.group_id))
        rule = definition.model.participants.on_dropout
        data = {"reason": reason, "by": who(actor, "researcher"), "stage": stage}
        now = db.now()
        if leave(
            db, definition, person, ExitStatus.REMOVED, stage, data, now, group=group, rule=rule
        ):
            return True
    return False


__all__ = [
    "AttritionRow",
    "GroupRow",
    "Monitor",
    "MonitorRow",
    "attrition",
    "remove_participant",
    "study_monitor",
    "wilson",
]
