"""The study's clock: everything time-driven, in one idempotent call, :func:`tick`.

Every participant page and the monitor call ``tick(db, code)`` on each refresh; nothing else runs
in the background besides the room worker. Each change is conditional (a participant's stage, a
group's status, a group number), so many sessions ticking at once make each change once. In
order: people gone from the lobby leave (``dropped``); groups are formed from the lobby; people
waiting past the lobby timeout are seated with agents or sent home (the study's rule); running
groups whose room ended, or whose time is up, end (everyone on to the post-survey, or out with
``error`` when the room failed); people absent from their room past ``dropout_seconds`` are
dropped and the study's dropout rule applied; in ``ordered`` rooms a seat whose turn timed out is
skipped, nudged, or given to its agent. Every such event is in the study's log with its time.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import storage
from conversation.exceptions import ConversationStateError
from conversation.rooms.boundary import translated
from conversation.study.clock.lobby import Draw, draw_group
from conversation.study.clock.seats import BY, apply_seat_rule, exit_if_at
from conversation.study.clock.turns import turn_timeouts
from conversation.study.definition.document import StudyDefinition, group_room_config
from conversation.study.definition.schema import OnLobbyTimeout, TurnOrder
from conversation.study.record import Study, get_study, study_definition
from conversation.vocabulary import (
    ENDED_ROOM_STATUSES,
    ExitStatus,
    GroupStatus,
    ParticipantStage,
    RoomStatus,
    StudyEventKind,
)


@dataclass(frozen=True, slots=True)
class TickReport:
    """What one tick changed."""

    formed: int = 0
    timed_out: int = 0
    dropped: int = 0
    ended: int = 0


def tick(db: storage.Database, code: str, *, now: datetime | None = None) -> TickReport:
    """Apply everything due in the study now (see the module docstring). When nothing is due it
    only reads: the study, who is in the lobby and in rooms, the running groups' rooms."""
    study = get_study(db, code)
    definition = study_definition(db, study)
    now = now or db.now()
    dropped = formed = timed_out = ended = 0
    if storage.list_participants(db, study.id, stage=ParticipantStage.LOBBY):
        dropped = _lobby_dropouts(db, study, definition, now)
        formed = _form_groups(db, study, definition, fill=False)
        timed_out = _lobby_timeouts(db, study, definition, now)
    members: dict[int, list[Any]] = {}
    for person in storage.list_participants(db, study.id, stage=ParticipantStage.ROOM):
        members.setdefault(int(person.group_id or 0), []).append(person)
    for group, status, reason in storage.running_groups(db, study.id):
        people = members.get(int(group.id or 0), [])
        if _ends(db, study, definition, (group, status, reason), people, now):
            ended += 1
            continue
        staying = [p for p in people if not _dropped(db, study, definition, group, p, now)]
        dropped += len(people) - len(staying)
        if not staying:
            _stop(db, int(group.room_id or 0), "every participant has left")
            ended += _ends(db, study, definition, (group, RoomStatus.STOPPED, None), [], now)
        elif definition.model.room.turns == TurnOrder.ORDERED:
            turn_timeouts(db, study, definition, group, now)
    return TickReport(formed, timed_out, dropped, ended)


def is_full(db: storage.Database, study: Study, definition: StudyDefinition) -> bool:
    """Whether every condition has all its groups (nobody else can be seated)."""
    counts = storage.group_numbers(db, study.id)
    target = definition.model.experiment.groups
    return all(counts.get(c.label, 0) >= target for c in definition.conditions)


def _stop(db: storage.Database, room_id: int, reason: str) -> None:
    from conversation.rooms.room import Room

    with contextlib.suppress(ConversationStateError):  # it ended meanwhile
        Room(db, room_id).stop(reason, by=BY)


def _waiting(db: storage.Database, study: Study) -> list[Any]:
    people = storage.list_participants(db, study.id, stage=ParticipantStage.LOBBY)
    return sorted(people, key=lambda p: (p.lobby_at or p.joined_at, p.id))


def _absent(person: Any, definition: StudyDefinition, now: datetime) -> bool:
    limit = timedelta(seconds=definition.model.participants.dropout_seconds)
    return bool(now - person.last_seen_at > limit)


def _lobby_dropouts(
    db: storage.Database, study: Study, definition: StudyDefinition, now: datetime
) -> int:
    dropped = 0
    for person in _waiting(db, study):
        if _absent(person, definition, now):
            dropped += exit_if_at(
                db,
                definition,
                person,
                ExitStatus.DROPPED,
                ParticipantStage.LOBBY,
                {"where": ParticipantStage.LOBBY},
                now,
            )
    return dropped


def _form_groups(
    db: storage.Database, study: Study, definition: StudyDefinition, *, fill: bool
) -> int:
    """Form every group the lobby can (``fill``: one group, empty seats to agents)."""
    formed = 0
    conditions = [(c.label, list(c.seats)) for c in definition.conditions]
    target = definition.model.experiment.groups
    while True:
        waiting = [int(p.id) for p in _waiting(db, study)]
        counts = storage.group_numbers(db, study.id)
        draw = draw_group(conditions, counts, target, waiting, study.seed, fill=fill)
        if draw is None:
            return formed
        if _form(db, study, definition, draw) is None:
            return formed  # another session formed a group meanwhile: the next tick goes on
        formed += 1
        if fill:
            return formed


def _form(db: storage.Database, study: Study, definition: StudyDefinition, draw: Draw) -> Any:
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
        speaker=definition.model.room.host,
        request_id=f"study-c{index}-g{draw.number}-opening",
    )
    with translated():
        group = storage.form_group(
            db, study.id, room=room, seats=draw.seats, assignment=draw.assignment
        )
        if group is not None and draw.agent_seats:
            storage.record_study_event(
                db,
                study.id,
                StudyEventKind.FILLED_WITH_AGENTS,
                group_id=int(group.id or 0),
                data={"seats": draw.agent_seats, "seed": draw.assignment["seed"]},
            )
    return group


def _lobby_timeouts(
    db: storage.Database, study: Study, definition: StudyDefinition, now: datetime
) -> int:
    """People waiting past the lobby timeout: seated with agents (the longest-waiting first),
    or sent home with the ``lobby_timeout`` code; everyone waiting is sent home at once when
    every group has been formed (the study is full)."""
    limit = timedelta(seconds=definition.model.lobby.timeout_seconds)
    timed_out = 0
    while True:
        waiting = _waiting(db, study)
        full = bool(waiting) and is_full(db, study, definition)
        late = [p for p in waiting if full or now - (p.lobby_at or p.joined_at) > limit]
        if not late:
            return timed_out
        if definition.model.lobby.on_timeout == OnLobbyTimeout.AGENTS and not full:
            if _form_groups(db, study, definition, fill=True):
                timed_out += 1
                continue
            if not is_full(db, study, definition):
                return timed_out  # another session formed a group meanwhile: the next tick

        person = late[0]
        waited = round((now - (person.lobby_at or person.joined_at)).total_seconds())
        data = {"waited_s": waited, "study_full": full}
        timeout, lobby = ExitStatus.LOBBY_TIMEOUT, ParticipantStage.LOBBY
        if not exit_if_at(db, definition, person, timeout, lobby, data, now):
            return timed_out  # another session took them meanwhile
        timed_out += 1


def _ends(
    db: storage.Database,
    study: Study,
    definition: StudyDefinition,
    running: tuple[Any, str, str | None],
    people: list[Any],
    now: datetime,
) -> bool:
    """End the group when its room ended or its time is up: everyone in it (``people``) on to
    the post-survey (or out with ``error`` when the room failed). True when it is over."""
    group, status, reason = running
    limit = timedelta(seconds=definition.model.room.time_limit_seconds)
    reason = reason or status
    if status not in ENDED_ROOM_STATUSES:
        if now - group.started_at < limit:
            return False
        reason = "the time limit was reached"
        _stop(db, int(group.room_id), reason)
    with translated():
        ended = storage.update_group(
            db,
            int(group.id),
            expected_status=GroupStatus.RUNNING,
            status=GroupStatus.ENDED,
            ended_at=now,
        )
    if ended is None:
        return True  # another session ended it
    storage.record_study_event(
        db,
        study.id,
        StudyEventKind.ROOM_ENDED,
        group_id=int(group.id),
        data={"reason": reason[:500]},
    )
    for person in people:
        room = ParticipantStage.ROOM
        if status == RoomStatus.FAILED:
            why = {"reason": reason[:500]}
            exit_if_at(db, definition, person, ExitStatus.ERROR, room, why, now)
        elif definition.model.post_survey:
            with translated():
                storage.update_participant(
                    db, int(person.id), expected_stages={room}, stage=ParticipantStage.POST_SURVEY
                )
        else:
            exit_if_at(db, definition, person, ExitStatus.COMPLETED, room, {}, now)
    return True


def _dropped(
    db: storage.Database,
    study: Study,
    definition: StudyDefinition,
    group: Any,
    person: Any,
    now: datetime,
) -> bool:
    """Drop ``person`` if absent past ``dropout_seconds`` and apply the study's rule to their
    seat; True when they are out (now or by another session)."""
    if not _absent(person, definition, now):
        return False
    rule = definition.model.participants.on_dropout
    absent = round((now - person.last_seen_at).total_seconds())
    room = ParticipantStage.ROOM
    data = {"where": room, "seat": person.seat, "rule": rule, "absent_s": absent}
    if exit_if_at(db, definition, person, ExitStatus.DROPPED, room, data, now):
        apply_seat_rule(db, study, definition, group, person.seat, rule)
    return True


__all__ = ["TickReport", "tick"]
