"""The researcher's live view of a study: :func:`study_monitor` says where everyone is
(consent, lobby, room, idle, done), which groups run with who in each seat, attrition by
condition with a Wilson 95% interval (``researcher.attrition``), whether the study is full (the
link refuses newcomers), and each participant's unread help messages. The researcher's acts are
``researcher.acts`` and ``study.help``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import storage
from conversation.boundary import translated
from conversation.study.clock.ticks import is_full
from conversation.study.help import unread_count
from conversation.study.record import Study, get_study, study_definition
from conversation.study.researcher.attrition import AttritionRow, attrition
from conversation.vocabulary import (
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
    idle_seconds: float | None  # None once they left: nobody waits for them
    joined_at: datetime
    help_unread: int


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
    full: bool = False
    """Whether the link refuses newcomers as full: the cap's places are taken (people who
    consented), or every group has been formed."""


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
                None if p.stage == ParticipantStage.EXIT else max(0.0, idle.total_seconds()),
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
        full=_full(db, study, definition),
    )


def _full(db: storage.Database, study: Study, definition: Any) -> bool:
    if is_full(db, study, definition):
        return True
    if study.cap is None:
        return False
    with translated():
        return storage.count_places(db, study.id) >= study.cap


__all__ = ["GroupRow", "Monitor", "MonitorRow", "study_monitor"]
