"""The study's clock: everything time-driven, in one idempotent call, :func:`tick`.

The clock runs where rooms, experiments and analyses run: in ``python -m conversation.worker``
and in the app's in-process runner (``conversation.worker.studies.StudyClock`` calls
:func:`tick_all` every second); pages only read and post. Each change is conditional (a
participant's stage, a group's status, a group number) and one write, so several processes
ticking at once make each change once. In order:

1. people away past the absence limit leave, at whatever stage they are (consent and pre-survey:
   ``abandoned``; lobby: ``dropped``; post-survey: ``unfinished``; the room: below), absence
   judged only while the participants' service is up (``clock.absence``);
2. groups are formed from the lobby; people waiting past the lobby timeout are seated with agents
   or sent home (the study's rule), or all sent home once every group has been formed;
3. running groups whose room ended, or whose time is up, end (everyone on to the post-survey, or
   out with ``error`` when the room failed); people away from their room leave with the study's
   rule for their seat (``clock.seats``); a room every person left is stopped; the idle rules
   wake an agent or end a silent room (``clock.idle``); in ``ordered`` rooms a seat whose turn
   timed out is skipped, nudged, or given to its agent; attention checks are put on schedule
   and those not answered in time recorded as missed (``study.attention``).

Every such change is in the study's log with its time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import storage
from conversation.boundary import translated
from conversation.rooms.moves import STOPPABLE, stop_notice
from conversation.study.clock.absence import Absence, absence_now
from conversation.study.clock.attention import attention_due
from conversation.study.clock.idle import room_rules_now
from conversation.study.clock.lobby import Draw, draw_group
from conversation.study.clock.seats import BY, leave
from conversation.study.clock.turns import turn_timeouts
from conversation.study.definition.document import StudyDefinition, group_room_config
from conversation.study.definition.schema import OnLobbyTimeout, TurnOrder
from conversation.study.record import Study, exit_values, get_study, study_definition
from conversation.vocabulary import (
    ABSENCE_EXITS,
    ACTIVE_STAGES,
    ENDED_ROOM_STATUSES,
    ExitStatus,
    ParticipantStage,
    RoomStatus,
    StudyEventKind,
    exit_event,
)

#: The stages whose absence rule is an exit alone (a seat in a room has its own rule).
OUTSIDE_ROOMS = frozenset(ACTIVE_STAGES - {ParticipantStage.ROOM})
EVERYONE_LEFT = "every participant has left"
TIME_LIMIT = "the time limit was reached"


@dataclass(frozen=True, slots=True)
class TickReport:
    """What one tick changed (``dropped``: everyone who left for being away, at any stage)."""

    formed: int = 0
    timed_out: int = 0
    dropped: int = 0
    ended: int = 0


def tick(db: storage.Database, code: str, *, now: datetime | None = None) -> TickReport:
    """Apply everything due in the study now (see the module docstring). When nothing is due it
    only reads: the study, its people on their path, the running groups' rooms."""
    study = get_study(db, code)
    definition = study_definition(db, study)
    now = now or db.now()
    absence = absence_now(db, definition.model.participants.dropout_seconds, now)
    with translated():
        people = storage.list_participants(db, study.id, stage=ACTIVE_STAGES)
    dropped = sum(_away(db, definition, p, absence) for p in people if p.stage in OUTSIDE_ROOMS)
    formed = timed_out = ended = 0
    if any(p.stage == ParticipantStage.LOBBY for p in people):
        formed = _form_groups(db, study, definition, absence, fill=False)
        timed_out = _lobby_timeouts(db, study, definition, absence)
    # The running groups, then who is in them: in this order a group another process formed
    # meanwhile is either not in the list or has its people (never a group read as empty).
    with translated():
        running = storage.running_groups(db, study.id)
        in_rooms = storage.list_participants(db, study.id, stage=ParticipantStage.ROOM)
    members: dict[int, list[Any]] = {}
    for person in in_rooms:
        members.setdefault(int(person.group_id or 0), []).append(person)
    still: list[tuple[Any, list[Any]]] = []  # the groups running on, with their people
    for group, status, reason in running:
        here = members.get(int(group.id or 0), [])
        if _ends(db, definition, group, status, reason, here, now):
            ended += 1
            continue
        rule = definition.model.participants.on_dropout
        staying = [
            p
            for p in here
            if not (absence.gone(p.last_seen_at) and _drop(db, definition, group, p, rule, absence))
        ]
        dropped += len(here) - len(staying)
        if not staying:  # checked again in the write: nobody may have joined it since
            ended += finish_group(db, definition, group, [], EVERYONE_LEFT, now, only_if_empty=True)
            continue
        early = room_rules_now(db, study, definition, group, staying, absence)
        if early is not None:
            ended += finish_group(
                db, definition, group, staying, early.reason, now, notes=[early.note]
            )
            continue
        if definition.room_rules(str(group.condition)).turns == TurnOrder.ORDERED:
            turn_timeouts(db, study, definition, group, absence)
        still.append((group, staying))
    attention_due(db, study, definition, still, absence)
    return TickReport(formed, timed_out, dropped, ended)


def tick_all(db: storage.Database, *, now: datetime | None = None) -> dict[str, TickReport]:
    """:func:`tick` for every study with someone on their path or a group still running (the
    worker's clock calls it every second); the reports that changed something, by code."""
    with translated():
        codes = storage.active_study_codes(db)
    reports = {code: tick(db, code, now=now) for code in codes}
    return {code: r for code, r in reports.items() if r != TickReport()}


def is_full(db: storage.Database, study: Study, definition: StudyDefinition) -> bool:
    """Whether every condition has all its groups (nobody else can be seated)."""
    with translated():
        counts = storage.group_numbers(db, study.id)
    target = definition.model.experiment.groups
    return all(counts.get(c.label, 0) >= target for c in definition.conditions)


def _away(db: storage.Database, definition: StudyDefinition, person: Any, absence: Absence) -> int:
    """A person outside a room and away past the limit leaves with their stage's absence
    status; 1 if this call did it."""
    if not absence.gone(person.last_seen_at):
        return 0
    stage = ParticipantStage(person.stage)
    away = round(absence.away(person.last_seen_at) or 0)
    data = {"where": stage, "absent_s": away}
    status = ABSENCE_EXITS[stage]
    seen = person.last_seen_at
    return int(leave(db, definition, person, status, stage, data, absence.now, seen_before=seen))


def _drop(
    db: storage.Database,
    definition: StudyDefinition,
    group: Any,
    person: Any,
    rule: Any,
    absence: Absence,
) -> bool:
    """A person away from their room leaves, with the study's rule for their seat (one write).
    True when this call did it (else another process did, or the room's settings changed
    meanwhile and the next tick tries again)."""
    away = round(absence.away(person.last_seen_at) or 0)
    room = ParticipantStage.ROOM
    data = {"where": room, "seat": person.seat, "rule": rule, "absent_s": away}
    status = ABSENCE_EXITS[room]
    return leave(
        db,
        definition,
        person,
        status,
        room,
        data,
        absence.now,
        group=group,
        rule=rule,
        seen_before=person.last_seen_at,
    )


def _waiting(db: storage.Database, study: Study) -> list[Any]:
    with translated():
        people = storage.list_participants(db, study.id, stage=ParticipantStage.LOBBY)
    return sorted(people, key=lambda p: (p.lobby_at or p.joined_at, p.id))


def _form_groups(
    db: storage.Database,
    study: Study,
    definition: StudyDefinition,
    absence: Absence,
    *,
    fill: bool,
) -> int:
    """Form every group the lobby's present people can (``fill``: one group, empty seats to
    agents)."""
    formed = 0
    conditions = [(c.label, list(c.seats)) for c in definition.conditions]
    compositions = {
        c.label: c.composition.to_rule() for c in definition.conditions if c.composition
    }
    questions = {str(rule["question"]) for rule in compositions.values()}
    lobby = definition.model.lobby
    window = lobby.presence_seconds or 2 * definition.model.participants.heartbeat_seconds
    target = definition.model.experiment.groups
    while True:
        present = [p for p in _waiting(db, study) if _present(p, window, absence)]
        waiting = [int(p.id) for p in present]
        answers = {int(p.id): {q: (p.pre_survey or {}).get(q) for q in questions} for p in present}
        with translated():
            counts = storage.group_numbers(db, study.id)
        draw = draw_group(
            conditions,
            counts,
            target,
            waiting,
            study.seed,
            fill=fill,
            compositions=compositions,
            answers=answers,
        )
        if draw is None:
            return formed
        draw.assignment["present_within_s"] = window
        if _form(db, study, definition, draw) is None:
            return formed  # another process formed a group meanwhile: the next tick goes on
        formed += 1
        if fill:
            return formed


def _present(person: Any, window: float, absence: Absence) -> bool:
    """Whether a person's page is alive now: seen within ``window`` seconds, while the
    participants' service is up (during an outage nobody is matched)."""
    away = absence.away(person.last_seen_at)
    return away is not None and away <= window


def _form(db: storage.Database, study: Study, definition: StudyDefinition, draw: Draw) -> Any:
    """The drawn group, its room and its people seated, and (seats filled with agents) its
    note, in one write."""
    labels = [c.label for c in definition.conditions]
    index = labels.index(draw.condition)
    condition = definition.condition(draw.condition)
    template = definition.data["experiment"]["template"]
    config = group_room_config(
        definition, draw.condition, filled=draw.agent_seats, seed=draw.assignment["seed"]
    )
    room = storage.ExperimentRoom(
        name=f"{study.name} | {draw.condition} | #{draw.number}",
        config=config,
        condition=draw.condition,
        replicate=draw.number,
        opening=condition.opening or template["opening"],
        speaker=definition.room_rules(draw.condition).host,
        request_id=f"study-c{index}-g{draw.number}-opening",
    )
    notes = []
    if draw.agent_seats:
        filled = {"seats": draw.agent_seats, "seed": draw.assignment["seed"]}
        notes.append(storage.StudyNote(StudyEventKind.FILLED_WITH_AGENTS, filled))
    with translated():
        return storage.form_group(
            db, study.id, room=room, seats=draw.seats, assignment=draw.assignment, notes=notes
        )


def _lobby_timeouts(
    db: storage.Database, study: Study, definition: StudyDefinition, absence: Absence
) -> int:
    """People waiting past the lobby timeout: seated with agents (the longest-waiting first),
    or sent home with the ``lobby_timeout`` code; everyone waiting is sent home at once when
    every group has been formed (the study is full). A wait counts only while the
    participants' service is up (an outage does not send anyone home)."""
    if not absence.judging:
        return 0
    limit = timedelta(seconds=definition.model.lobby.timeout_seconds)
    timed_out = 0
    while True:
        waiting = _waiting(db, study)
        full = bool(waiting) and is_full(db, study, definition)

        def waited(person: Any) -> timedelta:
            return absence.now - absence.since(person.lobby_at or person.joined_at)

        late = [p for p in waiting if full or waited(p) > limit]
        if not late:
            return timed_out
        if definition.model.lobby.on_timeout == OnLobbyTimeout.AGENTS and not full:
            if _form_groups(db, study, definition, absence, fill=True):
                timed_out += 1
                continue
            if not is_full(db, study, definition):
                return timed_out  # another process formed a group meanwhile: the next tick
        person = late[0]
        data = {"waited_s": round(waited(person).total_seconds()), "study_full": full}
        lobby = ParticipantStage.LOBBY
        if not leave(db, definition, person, ExitStatus.LOBBY_TIMEOUT, lobby, data, absence.now):
            return timed_out  # another process took them meanwhile
        timed_out += 1


def _ends(
    db: storage.Database,
    definition: StudyDefinition,
    group: Any,
    status: str,
    reason: str | None,
    people: list[Any],
    now: datetime,
) -> bool:
    """End the group when its room ended or its time is up (:func:`finish_group`). True when it
    is over (now or by another process)."""
    if status in ENDED_ROOM_STATUSES:
        finish_group(db, definition, group, people, (reason or status), now, room_status=status)
        return True
    limit = definition.room_rules(str(group.condition)).time_limit_seconds
    if now - group.started_at < timedelta(seconds=limit):
        return False
    finish_group(db, definition, group, people, TIME_LIMIT, now)
    return True


def finish_group(
    db: storage.Database,
    definition: StudyDefinition,
    group: Any,
    people: list[Any],
    reason: str,
    now: datetime,
    *,
    room_status: str | None = None,
    by: str = BY,
    only_if_empty: bool = False,
    notes: Sequence[storage.StudyNote] = (),
) -> bool:
    """One write: the group's room stopped for ``reason`` (unless it ended already:
    ``room_status``), the group ended, and everyone in it (``people``) on to the post-survey,
    or out with ``error`` when the room failed; ``notes``: what ended it, in the same write.
    False: another process ended it first, or (``only_if_empty``) someone is in it."""
    stop = None
    if room_status not in ENDED_ROOM_STATUSES:
        stop = storage.StopRoom(int(group.room_id), reason, STOPPABLE, *stop_notice(reason, by))
    why = reason[:500]
    moves = [_moved_on(definition, p, room_status or "", why, now) for p in people]
    with translated():
        return storage.end_group(
            db,
            int(group.id),
            reason=why,
            moves=moves,
            room=stop,
            only_if_empty=only_if_empty,
            notes=notes,
        )


def end_fields(
    definition: StudyDefinition, status: str, now: datetime
) -> tuple[dict[str, Any], ExitStatus | None]:
    """Where a person in a group whose conversation ended goes: out with ``error`` (its room
    failed), on to the post-survey, or out with ``completed`` (no post-survey); the fields and
    the exit status (None: not an exit)."""
    if status == RoomStatus.FAILED:
        return exit_values(definition, ExitStatus.ERROR, now), ExitStatus.ERROR
    if definition.model.post_survey:
        return {"stage": ParticipantStage.POST_SURVEY}, None
    return exit_values(definition, ExitStatus.COMPLETED, now), ExitStatus.COMPLETED


def _moved_on(
    definition: StudyDefinition, person: Any, status: str, reason: str, now: datetime
) -> storage.ParticipantMove:
    fields, exit_status = end_fields(definition, status, now)
    event = None if exit_status is None else (exit_event(exit_status), {"reason": reason})
    return storage.ParticipantMove(int(person.id), {ParticipantStage.ROOM}, fields, event)


__all__ = [
    "EVERYONE_LEFT",
    "TIME_LIMIT",
    "TickReport",
    "end_fields",
    "finish_group",
    "is_full",
    "tick",
    "tick_all",
]
