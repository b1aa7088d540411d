"""Attention checks inside the room (issue 33): put by the clock or the researcher, answered
by the person, each step in the study's log.

A check is a popup on a person's page: a question with choices, answered within its
``answer_seconds``. It is put to them by the researcher from the monitor
(:func:`send_attention_check`) or by the definition's schedule (``room.attention_checks``, at
``at_seconds`` after the room starts: :func:`attention_due`, from the clock); the person answers
from their page (``participant.acts.answer_attention_check``: :func:`answer_check`). Everything is in
the study's log: the check put (``attention_check``, its id is the entry's), the answer
(``attention_answered``: right or not, how long it took) or its absence past the time limit
(``attention_missed``). A check whose ``on_fail`` is ``exit`` sends a person who answers wrongly
or not at all out with ``failed_check`` (their seat by the study's dropout rule, one write).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import storage
from conversation.access.roles import Action, Actor, require, who
from conversation.boundary import translated
from conversation.exceptions import ConversationValueError
from conversation.study.clock.absence import Absence
from conversation.study.clock.seats import leave
from conversation.study.definition.document import StudyDefinition
from conversation.study.definition.rules import AttentionCheckIn, OnCheckFail
from conversation.study.errors import NotNow
from conversation.study.record import get_study, member
from conversation.text.schema import validated
from conversation.vocabulary import ExitStatus, ParticipantStage, StudyEventKind

#: The study log's kinds of an attention check's life.
ATTENTION_KINDS = frozenset(
    {
        StudyEventKind.ATTENTION_CHECK,
        StudyEventKind.ATTENTION_ANSWERED,
        StudyEventKind.ATTENTION_MISSED,
    }
)
SCHEDULE = "schedule"


@dataclass(frozen=True, slots=True)
class AttentionPrompt:
    """A check waiting for the person's answer, as their page shows it."""

    check_id: int
    question_text: str
    question_options: list[str]
    deadline: datetime

    def seconds_left(self, now: datetime) -> float:
        return max(0.0, (self.deadline - now).total_seconds())


def _check_place(loc: Sequence[Any]) -> str:
    return " ".join(["attention check", *map(str, loc)])


def send_attention_check(
    db: storage.Database,
    code: str,
    participant_id: int,
    check: Mapping[str, Any],
    *,
    actor: Actor | None = None,
) -> int:
    """Put an attention check (``{name, question_text, question_options, correct,
    answer_seconds, on_fail}``) to a person in a room; the check's id. ``ConversationValueError``
    naming a bad field, or when the person is not in a room."""
    require(actor, Action.CONTROL)
    study = get_study(db, code)
    checked = validated(AttentionCheckIn, dict(check), place=_check_place)
    person = member(db, study, participant_id)
    if person.stage != ParticipantStage.ROOM:
        raise ConversationValueError(
            f"participant {participant_id} is not in a room (at the {person.stage} step)"
        )
    return _put(db, study.id, person, checked, who(actor, "researcher"))


def _put(
    db: storage.Database,
    study_id: int,
    person: Any,
    check: AttentionCheckIn,
    by: str,
    now: datetime | None = None,
) -> int:
    """The check put to ``person`` at ``now`` (the clock's time; default the database's): its
    deadline is in the entry, so every reader agrees when it closes."""
    deadline = (now or db.now()) + timedelta(seconds=check.answer_seconds)
    data = check.model_dump(exclude={"at_seconds"}) | {"by": by, "deadline": deadline.isoformat()}
    with translated():
        return storage.record_study_event(
            db,
            study_id,
            StudyEventKind.ATTENTION_CHECK,
            participant_id=int(person.id),
            group_id=person.group_id,
            data=data,
        )


def pending_check(notes: Iterable[Any]) -> AttentionPrompt | None:
    """The person's check still waiting for an answer (``notes``: their study log entries,
    oldest first), or None."""
    settled = {
        (n.data or {}).get("check_id")
        for n in notes
        if n.kind in (StudyEventKind.ATTENTION_ANSWERED, StudyEventKind.ATTENTION_MISSED)
    }
    for note in reversed(list(notes)):
        if note.kind == StudyEventKind.ATTENTION_CHECK and note.id not in settled:
            data = note.data or {}
            return AttentionPrompt(
                int(note.id),
                str(data.get("question_text", "")),
                [str(o) for o in data.get("question_options", [])],
                datetime.fromisoformat(str(data["deadline"])),
            )
    return None


def answer_check(
    db: storage.Database,
    study_id: int,
    definition: StudyDefinition,
    person: Any,
    check_id: Any,
    answer: Any,
    now: datetime,
) -> bool:
    """Record ``person``'s answer to their pending check (the participant's act,
    ``participant.acts.answer_attention_check``); True when it is right. :class:`NotNow` when
    the check is not theirs, already answered, or past its time."""
    with translated():
        notes = storage.study_events(
            db, study_id, participant_id=int(person.id), kinds=ATTENTION_KINDS
        )
    prompt = pending_check(notes)
    if prompt is None or prompt.check_id != check_id:
        raise NotNow("This question has already been answered or has closed.")
    sent = next(n for n in notes if n.id == prompt.check_id)
    data = sent.data or {}
    if now > prompt.deadline:
        raise NotNow("The time to answer this question is over.")
    if not isinstance(answer, str) or answer not in prompt.question_options:
        raise ConversationValueError(f"the answer must be one of {prompt.question_options}")
    right = answer == data.get("correct")
    result = {
        "check_id": prompt.check_id,
        "name": data.get("name"),
        "answer": answer,
        "right": right,
        "seconds": round(
            (now - prompt.deadline).total_seconds() + float(data.get("answer_seconds", 30)), 1
        ),
    }
    note = storage.StudyNote(
        StudyEventKind.ATTENTION_ANSWERED, result, int(person.id), person.group_id
    )
    if not right and data.get("on_fail") == OnCheckFail.EXIT:
        _fail(db, definition, person, result, note, now)
    else:
        with translated():
            storage.record_study_notes(db, study_id, [note])
    return right


def _fail(
    db: storage.Database,
    definition: StudyDefinition,
    person: Any,
    result: Mapping[str, Any],
    note: storage.StudyNote,
    now: datetime,
) -> bool:
    """The person leaves with ``failed_check`` and the check's outcome, their seat by the
    study's dropout rule, in one write."""
    group = None
    if person.group_id is not None:
        with translated():
            group = storage.get_group(db, int(person.group_id))
    rule = definition.model.participants.on_dropout
    data = {"attention_check": result.get("name"), "check_id": result.get("check_id")}
    room = ParticipantStage.ROOM
    failed = ExitStatus.FAILED_CHECK
    return leave(
        db, definition, person, failed, room, data, now, group=group, rule=rule, notes=[note]
    )


def attention_due(
    db: storage.Database,
    study: Any,
    definition: StudyDefinition,
    running: Sequence[tuple[Any, Sequence[Any]]],
    absence: Absence,
) -> None:
    """The clock's part: put each scheduled check due in a running group (``running``: each
    group with its people in the room) to each of its people, once; record the checks not
    answered in time as missed (and send out those whose rule says so). Time counts only while
    the participants' service is up."""
    if not absence.judging:
        return
    scheduled = any(definition.room_rules(str(g.condition)).attention_checks for g, _ in running)
    with translated():
        notes = storage.study_events(db, study.id, kinds=ATTENTION_KINDS)
    if not notes and not scheduled:
        return
    mine: dict[int, list[Any]] = {}
    for note in notes:
        mine.setdefault(int(note.participant_id or 0), []).append(note)
    for group, people in running:
        checks = definition.room_rules(str(group.condition)).attention_checks
        elapsed = (absence.now - absence.since(group.started_at)).total_seconds()
        for person in people:
            own = mine.get(int(person.id), [])
            put = {
                (n.data or {}).get("name") for n in own if n.kind == StudyEventKind.ATTENTION_CHECK
            }
            for check in checks:
                if check.name not in put and elapsed >= (check.at_seconds or 0):
                    _put(db, study.id, person, check, SCHEDULE, absence.now)
                    break  # one popup at a time: the next one on a later tick
            _missed(db, study, definition, person, own, absence)


def _missed(
    db: storage.Database,
    study: Any,
    definition: StudyDefinition,
    person: Any,
    notes: list[Any],
    absence: Absence,
) -> None:
    prompt = pending_check(notes)
    if prompt is None:
        return
    sent = next(n for n in notes if n.id == prompt.check_id)
    put_at = prompt.deadline - timedelta(seconds=int((sent.data or {}).get("answer_seconds", 30)))
    allowed = (prompt.deadline - put_at).total_seconds()
    if (absence.now - absence.since(put_at)).total_seconds() <= allowed:
        return  # in time (an outage since it was put gave the person its whole time again)
    data = sent.data or {}
    result = {"check_id": prompt.check_id, "name": data.get("name"), "right": False}
    note = storage.StudyNote(
        StudyEventKind.ATTENTION_MISSED, result, int(person.id), person.group_id
    )
    if data.get("on_fail") == OnCheckFail.EXIT:
        _fail(db, definition, person, result, note, absence.now)
        return
    with translated():
        storage.record_study_notes(db, study.id, [note])


def attention_summary(notes: Iterable[Any]) -> dict[str, int]:
    """A person's attention checks counted: put, answered right, answered wrongly, missed."""
    counts = {"put": 0, "right": 0, "wrong": 0, "missed": 0}
    for note in notes:
        if note.kind == StudyEventKind.ATTENTION_CHECK:
            counts["put"] += 1
        elif note.kind == StudyEventKind.ATTENTION_ANSWERED:
            counts["right" if (note.data or {}).get("right") else "wrong"] += 1
        elif note.kind == StudyEventKind.ATTENTION_MISSED:
            counts["missed"] += 1
    return counts


__all__ = [
    "ATTENTION_KINDS",
    "AttentionPrompt",
    "answer_check",
    "attention_due",
    "attention_summary",
    "pending_check",
    "send_attention_check",
]
