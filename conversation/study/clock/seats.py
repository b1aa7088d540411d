"""A participant's exit, and the seat they leave, in one write.

:func:`leave` moves a participant out with an exit status only if they are still at the stage
the caller saw (many processes tick at once: one of them does it) and, when they held a seat of a
running group, applies the study's rule to it in the same transaction (:func:`seat_rule`):
``pause`` the room, ``continue`` without them, an ``agent`` (the seat's stand-in, the template's
role) takes it, or ``end`` the room. The group's seats, the room and the study's log change
together, or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import storage
from conversation.boundary import translated
from conversation.rooms.config import RoomConfig
from conversation.rooms.editing import changed_config, version_notice
from conversation.rooms.moves import PAUSABLE, STOPPABLE, move_notice, stop_notice
from conversation.study.definition.document import StudyDefinition, stand_in
from conversation.study.definition.schema import OnDropout
from conversation.study.record import exit_values
from conversation.vocabulary import (
    ExitStatus,
    NoticeKind,
    ParticipantStage,
    SeatHolder,
    StudyEventKind,
    exit_event,
)

#: Who the study's own acts on a room are recorded as.
BY = "study"
#: What the study's log records for each seat rule.
SEAT_RULE_EVENTS = {
    OnDropout.PAUSE: StudyEventKind.ROOM_PAUSED,
    OnDropout.CONTINUE: StudyEventKind.SEAT_LEFT,
    OnDropout.AGENT: StudyEventKind.SEAT_TAKEN_BY_AGENT,
    OnDropout.END: StudyEventKind.ROOM_STOPPED,
}


def seat_rule(
    db: storage.Database,
    definition: StudyDefinition,
    group: Any,
    seat: str,
    rule: OnDropout,
) -> storage.SeatRule:
    """What the study's ``rule`` does to ``seat`` of ``group`` its person left (see the module
    docstring), as one storage ``SeatRule``."""
    room_id = int(group.room_id)
    note = storage.StudyNote(
        SEAT_RULE_EVENTS[rule], {"seat": seat, "rule": rule}, group_id=int(group.id)
    )
    holder: str = SeatHolder.LEFT
    room: storage.RoomMove | None = None
    if rule == OnDropout.PAUSE:
        room = storage.PauseRoom(room_id, PAUSABLE, *move_notice(NoticeKind.PAUSED, BY))
    elif rule == OnDropout.END:
        reason = f"{seat}'s participant left"
        room = storage.StopRoom(room_id, reason, STOPPABLE, *stop_notice(reason, BY))
    elif rule == OnDropout.AGENT:
        holder = SeatHolder.AGENT
        with translated():
            base = storage.get_room(db, room_id).config
        config = RoomConfig.from_dict(base)
        if seat not in config.names:
            roster = [*config.roster, stand_in(definition, str(group.condition), seat)]
            new, fields = changed_config(config, {"agents": roster})
            notice = version_notice(BY, fields)
            room = storage.ChangeRoster(room_id, base, new.to_dict(), BY, fields, notice)
    return storage.SeatRule(int(group.id), seat, holder, note, room)


def leave(
    db: storage.Database,
    definition: StudyDefinition,
    person: Any,
    status: ExitStatus,
    stage: ParticipantStage,
    data: Mapping[str, Any],
    now: datetime,
    *,
    group: Any = None,
    rule: OnDropout | None = None,
    notes: Sequence[storage.StudyNote] = (),
    seen_before: datetime | None = None,
) -> bool:
    """Move ``person`` out with ``status`` if they are still at ``stage`` (and, with
    ``seen_before``, have given no sign of life since: an absence judged from an older read)
    and, with ``group`` and ``rule``, apply the rule to the seat they held, with ``notes``: one
    write. True if this call did it."""
    move = storage.ParticipantMove(
        int(person.id),
        {stage},
        exit_values(definition, status, now),
        (exit_event(status), dict(data)),
        seen_before=seen_before,
    )
    seat = None
    if group is not None and rule is not None and person.seat:
        seat = seat_rule(db, definition, group, str(person.seat), rule)
    with translated():
        return storage.exit_participant(db, move, seat, notes=notes)


__all__ = ["BY", "SEAT_RULE_EVENTS", "leave", "seat_rule"]
