"""Human seats' turns in an ``ordered`` room: whose turn it is, and what a timed-out turn does.

The room's roster holds only agents; its planner answers each message and then waits (the room
settles). In an ``ordered`` study the human seats then take turns in the condition's seat order:
the seat due is the one after the last seat that spoke (or whose turn was skipped, when nothing
was said since). A seat whose person says nothing for ``turn_seconds`` while no agent drafts is
handled by the study's rule: ``skip`` (the next seat is due), ``nudge`` (a help message to the
person, then skip) or ``agent`` (the seat's stand-in agent takes it; the person leaves with the
``dropped`` code). Every timeout is in the study's log (``turn_timeout``) with the seat and time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import storage
from conversation.boundary import translated
from conversation.study.clock.absence import Absence
from conversation.study.clock.seats import leave
from conversation.study.definition.document import StudyDefinition
from conversation.study.definition.schema import OnDropout, OnTurnTimeout
from conversation.study.help import HelpSide, help_data
from conversation.vocabulary import (
    AWAITING_PEOPLE_STATUSES,
    ExitStatus,
    HumanMessage,
    ParticipantStage,
    StudyEventKind,
    entry_of,
)


def due_seat(
    db: storage.Database,
    study_id: int,
    definition: StudyDefinition,
    group: Any,
    events: list[Any],
) -> tuple[str | None, datetime | None, int]:
    """``(seat, since, last_seq)``: the human seat whose turn it is, since when, and the room's
    last seq; ``(None, None, seq)`` when no person holds a seat."""
    order = [s for s in definition.condition(str(group.condition)).seats]
    people = [s for s in order if isinstance(group.seats.get(s), int)]
    last_seq = events[-1].seq if events else 0
    if not people:
        return None, None, last_seq
    since = events[-1].updated_at if events else group.started_at
    mover: str | None = None
    for event in reversed(events):
        entry = entry_of(event)
        if isinstance(entry, HumanMessage) and entry.speaker in order:
            mover = entry.speaker
            break
    skips = [
        e
        for e in storage.study_events(db, study_id, kinds={StudyEventKind.TURN_TIMEOUT})
        if e.group_id == group.id and (e.data or {}).get("seq") == last_seq
    ]
    if skips:
        mover, since = str((skips[-1].data or {}).get("seat")), skips[-1].at
    start = order.index(mover) + 1 if mover in order else 0
    rotated = order[start:] + order[:start]
    return next(s for s in rotated if s in people), since, last_seq


def turn_timeouts(
    db: storage.Database,
    study: Any,
    definition: StudyDefinition,
    group: Any,
    absence: Absence,
) -> bool:
    """Apply the turn-timeout rule to the seat due, if its time is up; True when applied. A
    turn's time counts only while the participants' service is up (``absence``): nobody's turn
    runs out during an outage. The timeout, its nudge, or the person's exit and the stand-in
    taking the seat, are one write."""
    if not absence.judging:
        return False
    room = storage.get_room(db, int(group.room_id))
    if room.status not in AWAITING_PEOPLE_STATUSES:
        return False
    events = storage.events(db, int(group.room_id))
    seat, since, last_seq = due_seat(db, study.id, definition, group, events)
    rules = definition.model.room
    if seat is None or since is None:
        return False
    if absence.now - absence.since(since) < timedelta(seconds=rules.turn_seconds):
        return False
    holder = group.seats.get(seat)
    timeout = storage.StudyNote(
        StudyEventKind.TURN_TIMEOUT,
        {"seat": seat, "seq": last_seq, "rule": rules.on_turn_timeout},
        group_id=int(group.id),
    )
    if rules.on_turn_timeout == OnTurnTimeout.AGENT and isinstance(holder, int):
        person = storage.get_participant(db, holder)
        data = {"reason": "turn timeout", "seat": seat}
        return leave(
            db,
            definition,
            person,
            ExitStatus.DROPPED,
            ParticipantStage.ROOM,
            data,
            absence.now,
            group=group,
            rule=OnDropout.AGENT,
            notes=[timeout],
        )
    notes = [timeout]
    if rules.on_turn_timeout == OnTurnTimeout.NUDGE and isinstance(holder, int):
        nudge = help_data(HelpSide.RESEARCHER, "It is your turn to write a message.")
        notes.append(storage.StudyNote(StudyEventKind.HELP, nudge, participant_id=holder))
    with translated():
        storage.record_study_notes(db, study.id, notes)
    return True


__all__ = ["due_seat", "turn_timeouts"]
