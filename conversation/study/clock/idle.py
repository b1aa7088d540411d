"""The room's idle rules and the agents' readiness to end (issue 33), applied by the clock.

Silence is the people's: the time since the last message of a person in a seat (the room's
start when nobody has written), counted only while the participants' service is up (an outage
is nobody's silence), and only while the room waits for its people (an agent drafting is not
silence).

- **Wake-up** (``idle.wake_after_seconds``, ``idle.wake_agent``): once per silence, the host
  posts a message only that agent reads, @-mentioning it, so it speaks next; the post and the
  ``idle_wake`` entry of the study's log say when and why.
- **Auto-end** (``idle.end_after_seconds``): the room ends (``idle_end``, then ``room_ended``
  with the reason, one write).
- **Ready to end** (``agents.end_when_ready``, with hand raising): the room ends once every
  agent that has decided says ``ready_to_end`` in its latest decision.

An early end waits for the people's minimums (``min_seconds``, ``min_messages``: below them the
room does not end for them); the time limit does not wait.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import storage
from conversation.access.roles import Actor
from conversation.boundary import translated
from conversation.rooms.config import RoomConfig
from conversation.rooms.engine.kinds.hand import BY_RULE
from conversation.rooms.posting import post_message
from conversation.study.clock.absence import Absence
from conversation.study.clock.limits import room_limits
from conversation.study.clock.seats import BY
from conversation.study.definition.document import StudyDefinition
from conversation.study.definition.schema import RoomRulesIn
from conversation.vocabulary import (
    AWAITING_PEOPLE_STATUSES,
    AgentTurn,
    HumanMessage,
    Pass,
    StudyEventKind,
    entry_of,
)

WAKE_TEXT = (
    "@{agent} Nobody has written for {seconds} seconds. Please help the conversation move on."
)


@dataclass(frozen=True, slots=True)
class EarlyEnd:
    """A room the rules end now: the reason (the room's stop reason) and its log entry."""

    reason: str
    note: storage.StudyNote


def has_room_rules(rules: RoomRulesIn) -> bool:
    """Whether the clock has anything of this module to apply in such a room."""
    return rules.idle is not None or rules.agents.end_when_ready


def room_rules_now(
    db: storage.Database,
    study: Any,
    definition: StudyDefinition,
    group: Any,
    people: Sequence[Any],
    absence: Absence,
) -> EarlyEnd | None:
    """Apply the idle rules to a running group (see the module docstring): post a wake-up when
    one is due; return the room's early end when one is due (the caller ends the group)."""
    rules = definition.room_rules(str(group.condition))
    if not has_room_rules(rules) or not absence.judging:
        return None
    room_id = int(group.room_id)
    with translated():
        room = storage.get_room(db, room_id)
        if room.status not in AWAITING_PEOPLE_STATUSES:
            return None
        events = storage.events(db, room_id)
    seats = set(definition.condition(str(group.condition)).seats)
    last_seq, last_at = _last_person_message(events, seats, group.started_at)
    silent = (absence.now - absence.since(last_at)).total_seconds()
    done = all(
        room_limits(rules, str(p.seat), events, group.started_at, absence.now).can_leave
        for p in people
    )
    idle = rules.idle
    data = {"silent_s": round(silent), "after_seq": last_seq}
    ends = idle.end_after_seconds if idle is not None else None
    if ends is not None and done and silent >= ends:
        note = storage.StudyNote(StudyEventKind.IDLE_END, data, group_id=int(group.id))
        return EarlyEnd(f"nobody wrote for {ends} s (idle)", note)
    if (
        rules.agents.end_when_ready
        and done
        and all_ready(events, RoomConfig.from_dict(room.config))
    ):
        note = storage.StudyNote(StudyEventKind.IDLE_END, {"ready": True}, group_id=int(group.id))
        return EarlyEnd("every agent was ready to end", note)
    wakes = idle.wake_after_seconds if idle is not None else None
    if wakes is not None and idle is not None and idle.wake_agent and silent >= wakes:
        _wake(db, study, group, rules, idle.wake_agent, wakes, data)
    return None


def _last_person_message(
    events: Sequence[Any], seats: set[str], started_at: datetime
) -> tuple[int, datetime]:
    """The seq and time of the latest message of a person in a seat (0 and the room's start
    when nobody has written)."""
    for event in reversed(events):
        entry = entry_of(event)
        if isinstance(entry, HumanMessage) and entry.speaker in seats:
            return entry.seq, event.updated_at
    return 0, started_at


def all_ready(events: Sequence[Any], config: RoomConfig) -> bool:
    """Whether every agent of the room that has decided says ``ready_to_end`` in its latest
    decision (at least one agent has decided)."""
    latest: dict[str, bool] = {}
    for entry in map(entry_of, events):
        decision = entry.decision if isinstance(entry, AgentTurn | Pass) else None
        if decision and decision.get("by") != BY_RULE:  # a rule's pass is no decision
            latest[entry.speaker] = decision.get("ready_to_end") is True
    agents = [n for n in config.names if n in latest]
    return bool(agents) and all(latest[n] for n in agents)


def _wake(
    db: storage.Database,
    study: Any,
    group: Any,
    rules: RoomRulesIn,
    agent: str,
    seconds: int,
    data: dict[str, Any],
) -> None:
    """The wake-up, once per silence: the host's message only ``agent`` reads (its request id
    names the silence, so several clocks post it once), then its log entry."""
    after = data["after_seq"]
    with translated():
        done = storage.study_events(db, study.id, kinds={StudyEventKind.IDLE_WAKE})
    if any(e.group_id == group.id and (e.data or {}).get("after_seq") == after for e in done):
        return
    with translated():
        config = storage.get_room(db, int(group.room_id)).config
    if agent not in RoomConfig.from_dict(config).names:
        return  # its agent is gone (a roster edited by hand): nobody to wake
    post_message(
        db,
        int(group.room_id),
        WAKE_TEXT.format(agent=agent, seconds=seconds),
        speaker=rules.host,
        request_id=f"study-idle-wake-g{group.id}-after-{after}",
        to=[agent],
        actor=Actor.local(BY),
        config=config,
    )
    note = storage.StudyNote(StudyEventKind.IDLE_WAKE, {**data, "agent": agent}, group_id=group.id)
    with translated():
        storage.record_study_notes(db, study.id, [note])


__all__ = ["WAKE_TEXT", "EarlyEnd", "all_ready", "has_room_rules", "room_rules_now"]
