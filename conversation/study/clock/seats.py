"""What happens to a seat its person left, and a participant's exit made once.

:func:`exit_if_at` moves a participant out with an exit status only if they are still at the
stage the caller saw (many sessions tick at once: one of them does it). :func:`apply_seat_rule`
applies the study's rule to the seat they left: ``pause`` the room, ``continue`` without them,
an ``agent`` (the seat's stand-in, the template's role) takes it, or ``end`` the room; the
group's seats and the study's log record it with the time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import storage
from conversation.exceptions import ConversationStateError
from conversation.rooms.boundary import translated
from conversation.study.definition.document import StudyDefinition, stand_in
from conversation.study.definition.schema import OnDropout
from conversation.study.record import Study, exit_values
from conversation.vocabulary import (
    ExitStatus,
    ParticipantStage,
    SeatHolder,
    StudyEventKind,
    exit_event,
)

BY = "study"
#: What the study's log records for each seat rule.
SEAT_RULE_EVENTS = {
    OnDropout.PAUSE: StudyEventKind.ROOM_PAUSED,
    OnDropout.CONTINUE: StudyEventKind.SEAT_LEFT,
    OnDropout.AGENT: StudyEventKind.SEAT_TAKEN_BY_AGENT,
    OnDropout.END: StudyEventKind.ROOM_STOPPED,
}


def exit_if_at(
    db: storage.Database,
    definition: StudyDefinition,
    person: Any,
    status: ExitStatus,
    stage: ParticipantStage,
    data: dict[str, Any],
    now: datetime,
) -> int:
    """Move ``person`` out with ``status`` if they are still at ``stage``: 1 if this call did."""
    with translated():
        moved = storage.update_participant(
            db,
            int(person.id),
            expected_stages={stage},
            event=(exit_event(status), data),
            **exit_values(definition, status, now),
        )
    return int(moved is not None)


def apply_seat_rule(
    db: storage.Database,
    study: Study,
    definition: StudyDefinition,
    group: Any,
    seat: str,
    rule: str,
) -> None:
    """What happens to a seat its person left: ``pause`` the room, ``continue`` without them,
    an ``agent`` (the seat's stand-in) takes it, or ``end`` the room. Recorded."""
    from conversation.rooms.room import Room

    room = Room(db, int(group.room_id))
    holder = SeatHolder.LEFT
    try:
        if rule == OnDropout.PAUSE:
            room.pause(by=BY)
        elif rule == OnDropout.END:
            room.stop(f"{seat}'s participant left", by=BY)
        elif rule == OnDropout.AGENT:
            roster: list[Any] = list(room.config.roster)
            if seat not in room.config.names:
                roster.append(stand_in(definition, str(group.condition), seat))
                room.update_config({"agents": roster}, by=BY)
            holder = SeatHolder.AGENT
    except ConversationStateError:
        pass  # the room ended meanwhile
    with translated():
        storage.update_group(db, int(group.id), seat_changes={seat: holder})
        storage.record_study_event(
            db,
            study.id,
            SEAT_RULE_EVENTS[OnDropout(rule)],
            group_id=int(group.id),
            data={"seat": seat, "rule": rule},
        )


__all__ = ["BY", "apply_seat_rule", "exit_if_at"]
