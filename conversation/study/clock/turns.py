"""Human seats' turns in an ``ordered`` room: whose turn it is, and what a timed-out turn does.

The room's roster holds only agents; its planner answers each message and then waits (the room
settles). In an ``ordered`` study the human seats then take turns in the condition's seat order:
the seat due is the one after the last seat that spoke (or whose turn was skipped, when nothing
was said since); with ``turn_order = "drawn"`` each cycle (every seat a person holds has had its
turn) has its own order, drawn from the group's recorded seed and the cycle's number. A seat whose person says nothing for ``turn_seconds`` while no agent drafts is
handled by the study's rule: ``skip`` (the next seat is due), ``nudge`` (a help message to the
person, then skip) or ``agent`` (the seat's stand-in agent takes it; the person leaves with the
``dropped`` code). Every timeout is in the study's log (``turn_timeout``) with the seat and time.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import storage
from conversation.boundary import translated
from conversation.study.clock.absence import Absence
from conversation.study.clock.lobby import group_seed
from conversation.study.clock.seats import leave
from conversation.study.definition.document import StudyDefinition
from conversation.study.definition.rules import TurnDeal
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
    skips = [
        e
        for e in storage.study_events(db, study_id, kinds={StudyEventKind.TURN_TIMEOUT})
        if e.group_id == group.id
    ]
    last_skip = [e for e in skips if (e.data or {}).get("seq") == last_seq]
    if last_skip:
        since = last_skip[-1].at
    turns = _human_turns(events, skips, order)
    if definition.room_rules(str(group.condition)).turn_order == TurnDeal.DRAWN:
        seed = int((group.assignment or {}).get("seed") or 0)
        return drawn_due(order, people, turns, seed), since, last_seq
    mover = turns[-1] if turns else None
    start = order.index(mover) + 1 if mover in order else 0
    rotated = order[start:] + order[:start]
    return next(s for s in rotated if s in people), since, last_seq


def _human_turns(events: list[Any], skips: list[Any], order: list[str]) -> list[str]:
    """The human seats' turns so far, in order: each message of a seat, and each turn that
    timed out (recorded with the room's last seq then: it comes after that message)."""
    turns = [
        (entry.seq, 0, entry.speaker)
        for entry in map(entry_of, events)
        if isinstance(entry, HumanMessage) and entry.speaker in order
    ]
    turns += [
        (int((e.data or {}).get("seq") or 0), 1, str((e.data or {}).get("seat"))) for e in skips
    ]
    return [seat for _, _, seat in sorted(turns)]


def cycle_order(order: list[str], seed: int, cycle: int) -> list[str]:
    """The seats' order in cycle ``cycle`` (0-based) of a ``drawn`` room: a shuffle drawn with
    ``random.Random`` from the group's recorded seed and the cycle's number."""
    return random.Random(group_seed(seed, cycle + 1)).sample(order, len(order))


def drawn_due(order: list[str], people: list[str], turns: list[str], seed: int) -> str:
    """The seat due in a ``drawn`` room: a cycle ends once every seat a person holds has had a
    turn; the next cycle's order is drawn anew (:func:`cycle_order`)."""
    cycle, taken = 0, set[str]()
    for seat in turns:
        taken.add(seat)
        if set(people) <= taken:
            cycle, taken = cycle + 1, set()
    return next(s for s in cycle_order(order, seed, cycle) if s in people and s not in taken)


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
    rules = definition.room_rules(str(group.condition))
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


__all__ = ["cycle_order", "drawn_due", "due_seat", "turn_timeouts"]
