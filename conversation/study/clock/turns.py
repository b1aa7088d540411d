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
from conversation.study.clock.seats import apply_seat_rule, exit_if_at
from conversation.study.definition.document import StudyDefinition

#: Room statuses in which the people are being waited for.
WAITING_FOR_PEOPLE = frozenset({"settled", "idle"})


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
        if event.kind == "human" and event.speaker in order:
            mover = event.speaker
            break
    skips = [
        e
        for e in storage.study_events(db, study_id, kinds={"turn_timeout"})
        if e.group_id == group.id and (e.data or {}).get("seq") == last_seq
    ]
    if skips:
        mover, since = str((skips[-1].data or {}).get("seat")), skips[-1].at
    start = order.index(mover) + 1 if mover in order else 0
    rotated = order[start:] + order[:start]
    return next(s for s in rotated if s in people), since, last_seq


def turn_timeouts(
    db: storage.Database, study: Any, definition: StudyDefinition, group: Any, now: datetime
) -> bool:
    """Apply the turn-timeout rule to the seat due, if its time is up; True when applied."""
    room = storage.get_room(db, int(group.room_id))
    if room.status not in WAITING_FOR_PEOPLE:
        return False
    events = storage.events(db, int(group.room_id))
    seat, since, last_seq = due_seat(db, study.id, definition, group, events)
    rules = definition.model.room
    if seat is None or since is None or now - since < timedelta(seconds=rules.turn_seconds):
        return False
    holder = group.seats.get(seat)
    data = {"seat": seat, "seq": last_seq, "rule": rules.on_turn_timeout}
    storage.record_study_event(db, study.id, "turn_timeout", group_id=int(group.id), data=data)
    if rules.on_turn_timeout == "nudge" and isinstance(holder, int):
        storage.record_study_event(
            db,
            study.id,
            "help",
            participant_id=holder,
            data={"from": "researcher", "text": "It is your turn to write a message."},
        )
    elif rules.on_turn_timeout == "agent" and isinstance(holder, int):
        person = storage.get_participant(db, holder)
        if exit_if_at(
            db, definition, person, "dropped", "room", {"reason": "turn timeout", "seat": seat}, now
        ):
            apply_seat_rule(db, study, definition, group, seat, "agent")
    return True


__all__ = ["WAITING_FOR_PEOPLE", "due_seat", "turn_timeouts"]
