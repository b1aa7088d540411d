"""The participant's acts: join by the link, consent or decline, answer a survey, say "still
here", post in their room, leave it once its minimums are met, write to the researcher.

Every act takes the participant's token; only its sha256 is stored or looked up (a forged token
is :class:`NotAParticipant`). Stage changes are conditional, so two tabs doing the same thing at
once change it once. A post passes the same door as the researcher's (``rooms.posting``: the
message rule of ``text.limits``, a person's name, one write) and is rate limited per participant;
its provenance in the room's log is ``participant <pseudonym>``, never a recruitment id.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import storage
from conversation.access.roles import Actor
from conversation.boundary import translated
from conversation.exceptions import ConversationValueError
from conversation.rooms.posting import post_message
from conversation.study.clock.attention import answer_check
from conversation.study.clock.limits import RoomLimits, needs_log, room_limits
from conversation.study.clock.seats import seat_rule
from conversation.study.clock.ticks import end_fields, is_full
from conversation.study.clock.turns import due_seat
from conversation.study.consent import agreed_version
from conversation.study.definition.schema import OnDropout, TurnOrder
from conversation.study.definition.surveys import checked_answers
from conversation.study.errors import REFUSALS, NotNow, StudyRefused, TooFast, WrongStage
from conversation.study.help import HelpSide, help_data
from conversation.study.participant.checks import grade, survey_word
from conversation.study.participant.identity import participant, seat_of, token_hash
from conversation.study.participant.view import participant_view
from conversation.study.record import exit_values, get_study, study_definition
from conversation.study.signals.recording import (
    message_signals,
    record_message,
    record_survey,
    survey_signals,
)
from conversation.text.limits import MAX_REQUEST_ID_CHARS, check_message, check_text
from conversation.vocabulary import (
    ENDED_ROOM_STATUSES,
    ExitStatus,
    GroupStatus,
    ParticipantStage,
    RoomStatus,
    StudyEventKind,
    StudyStatus,
    exit_event,
)

#: Prolific's query parameters: the participant's recruitment id first.
RECRUITMENT_KEYS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
#: Parameters of the link itself, never kept as labels.
LINK_KEYS = frozenset({"study", "p", "token"})
MAX_LABELS = 30
MAX_LABEL_KEY = 64
MAX_LABEL_VALUE = 500


@dataclass(frozen=True, slots=True)
class ParticipantToken:
    """What ``join`` hands the page: the token to keep (in the page's URL), the participant's
    id and pseudonym, and whether they were already in (a reload, a second tab, the same PID)."""

    token: str
    participant_id: int
    pseudonym: str
    resumed: bool


def split_labels(labels: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """``(labels, recruitment)`` from a link's query parameters: Prolific's ids apart, the
    link's own parameters dropped, every key and value bounded text."""
    if not isinstance(labels, Mapping):
        raise ConversationValueError("labels must map query parameter names to values")
    kept: dict[str, str] = {}
    recruitment: dict[str, str] = {}
    for key, value in labels.items():
        if key in LINK_KEYS:
            continue
        if isinstance(value, list | tuple):  # a repeated parameter: its first value
            value = value[0] if value else ""
        check_text(key, "a link parameter's name", MAX_LABEL_KEY, one_line=True)
        check_text(value, f"link parameter {key!r}", MAX_LABEL_VALUE, one_line=True, empty=True)
        (recruitment if key in RECRUITMENT_KEYS else kept)[key] = value
    if len(kept) > MAX_LABELS:
        raise ConversationValueError(f"the link holds {len(kept)} parameters; at most {MAX_LABELS}")
    return kept, recruitment


def join(db: storage.Database, code: Any, labels: Mapping[str, Any]) -> ParticipantToken:
    """A person arrives by the link ``?study=<code>&...``. The same ``PROLIFIC_PID`` gets the
    same participant (``resumed``), never a second seat. :class:`StudyRefused` when the study
    is unknown, locked, closed or full."""
    study = get_study(db, code)
    kept, recruitment = split_labels(labels)
    full = is_full(db, study, study_definition(db, study))
    pid = recruitment.get("PROLIFIC_PID") or None
    token = secrets.token_urlsafe(24)
    with translated():
        admission = storage.admit_participant(
            db,
            study.id,
            token_hash=token_hash(token),
            pseudonym=f"p-{secrets.token_hex(4)}",
            recruitment_id=pid,
            recruitment=recruitment or None,
            labels=kept or None,
            stage=ParticipantStage.CONSENT,
            cap=0 if full else study.cap,  # full: only someone already in gets back in
        )
    if admission.participant is None:
        raise StudyRefused(admission.refused or StudyStatus.CLOSED)
    person = admission.participant
    return ParticipantToken(token, int(person.id or 0), person.pseudonym, admission.resumed)


def give_consent(db: storage.Database, token: str) -> Any:
    """Consent given: on to the pre-survey, or the lobby when there is none. The study's cap
    counts people who consented: when the last place was taken meanwhile, the person is told the
    study is full (they leave with the ``lobby_timeout`` code, ``study_full`` in the log)."""
    person, study, definition = participant(db, token)
    now = db.now()
    version = agreed_version(db, study, definition)  # the text they are agreeing to
    if definition.model.pre_survey:
        fields: dict[str, Any] = {"stage": ParticipantStage.PRE_SURVEY}
    else:
        fields = {"stage": ParticipantStage.LOBBY, "lobby_at": now}
    consent = storage.ParticipantMove(
        int(person.id),
        {ParticipantStage.CONSENT},
        {"consented_at": now, "consent_version": version, **fields},
        (StudyEventKind.CONSENTED, {"consent_version": version}),
    )
    timeout = ExitStatus.LOBBY_TIMEOUT
    full = storage.ParticipantMove(
        int(person.id),
        {ParticipantStage.CONSENT},
        exit_values(definition, timeout, now),
        (exit_event(timeout), {"study_full": True, "where": ParticipantStage.CONSENT}),
    )
    cap = 0 if is_full(db, study, definition) else study.cap
    with translated():
        done = storage.consent_within_cap(db, study.id, cap, consent=consent, full=full)
    if done is None:
        _moved_meanwhile(db, person, fields["stage"], "consent")
    return _view(db, token)


def decline(db: storage.Database, token: str) -> Any:
    """Consent declined: the participant leaves with the ``declined`` code."""
    person, _, definition = participant(db, token)
    exit_fields = exit_values(definition, ExitStatus.DECLINED, db.now())
    declined = (exit_event(ExitStatus.DECLINED), None)
    _move(db, person, ParticipantStage.CONSENT, declined, "decline", **exit_fields)
    return _view(db, token)


def answer_survey(
    db: storage.Database,
    token: str,
    answers: Mapping[str, Any],
    *,
    signals: Mapping[str, Any] | None = None,
) -> Any:
    """The answers of the current survey (every question asked answered, each by its type; a
    question whose condition does not hold is not asked): the pre-survey leads to the lobby,
    the post-survey to the exit with the ``completed`` code. A survey with comprehension checks
    grades each try (``checks``): a wrong answer with tries left keeps the person here (the
    view says why), one out of tries ends their path with ``failed_check``. ``signals``: the
    characters pasted into each answer (``signals.SurveySignalsIn``)."""
    person, study, definition = participant(db, token)
    checked_signals = survey_signals(signals) if signals is not None else None
    now = db.now()
    stage = person.stage
    if stage == ParticipantStage.PRE_SURVEY:
        questions, earlier = definition.model.pre_survey, {}
    elif stage == ParticipantStage.POST_SURVEY:
        questions, earlier = definition.model.post_survey, dict(person.pre_survey or {})
    else:
        raise WrongStage(stage, "answer a survey")
    checked = checked_answers(questions, answers, earlier)
    survey = survey_word(stage)
    graded = None
    if any(q.is_check for q in questions):
        with translated():
            tries = storage.study_events(
                db, study.id, participant_id=int(person.id), kinds={StudyEventKind.CHECK_ATTEMPT}
            )
        graded = grade(questions, checked, survey, tries)
    notes = []
    if graded is not None:
        attempt = storage.StudyNote(StudyEventKind.CHECK_ATTEMPT, graded.record, int(person.id))
        notes.append(attempt)
    if graded is not None and graded.wrong and not graded.failed:
        with translated():
            storage.record_study_notes(db, study.id, notes)  # a try, with tries left: stay
        return _view(db, token)
    if graded is not None and graded.failed:
        fields = exit_values(definition, ExitStatus.FAILED_CHECK, now)
        why = {"survey": survey, "questions": graded.failed}
        event = (exit_event(ExitStatus.FAILED_CHECK), why)
    elif stage == ParticipantStage.PRE_SURVEY:
        fields = {"pre_survey": checked, "stage": ParticipantStage.LOBBY, "lobby_at": now}
        event = (StudyEventKind.ANSWERED, {"survey": survey})
    else:
        fields = {"post_survey": checked, **exit_values(definition, ExitStatus.COMPLETED, now)}
        event = (StudyEventKind.ANSWERED, {"survey": survey})
    move = storage.ParticipantMove(int(person.id), {stage}, fields, event)
    with translated():
        moved = storage.exit_participant(db, move, None, notes=notes)
    if not moved:
        _moved_meanwhile(db, person, fields.get("stage"), "answer a survey")
    record_survey(db, study, definition, person, survey, checked, checked_signals)
    return _view(db, token)


def heartbeat(db: storage.Database, token: str, *, now: Any = None) -> None:
    """The page says the participant is still here (every ``heartbeat_seconds``)."""
    person, _, _ = participant(db, token)
    if person.stage == ParticipantStage.EXIT:
        return
    with translated():
        storage.update_participant(db, int(person.id), last_seen_at=now or db.now())


def post_as_participant(
    db: storage.Database,
    token: str,
    text: Any,
    *,
    request_id: str | None = None,
    signals: Mapping[str, Any] | None = None,
) -> int:
    """Post ``text`` in the participant's room as their seat (a human message with the
    participant's provenance); returns its seq. :class:`WrongStage` outside a running room,
    :class:`TooFast` over the study's rate, ``ConversationValueError`` for a refused text.
    ``signals``: how the page saw it written (``signals.MessageSignalsIn``), stored with it."""
    person, study, definition, seat = seat_of(db, token)  # one read for all the checks
    checked = message_signals(signals) if signals is not None else None
    if request_id is not None:
        check_text(request_id, "request_id", MAX_REQUEST_ID_CHARS - 40, one_line=True)
    room_id = _open_room(person, seat)
    rules = definition.room_rules(str(person.condition))
    if needs_log(rules):  # a maximum, or ordered turns: the room's rules say whether to post
        closed = _limits(db, study, definition, person, room_id, db.now()).closed_reason
        if closed is not None:
            raise NotNow(closed)
    rate = definition.model.participants.rate
    actor = Actor.participant(person.pseudonym, str(person.seat))
    # The rate count and the message are one write transaction (a refused post counts nothing;
    # a post proves presence: no write of its own for it).
    charge = storage.PostRate(int(person.id), rate.seconds, rate.messages, db.now())
    with translated(REFUSALS):
        event = post_message(
            db,
            room_id,
            text,
            speaker=person.seat,
            request_id=f"participant-{person.id}-{request_id}" if request_id else None,
            actor=actor,
            config=seat.room_config,
            charge=charge,
        )
    record_message(db, study, definition, person, room_id, int(event.seq), text, checked)
    return int(event.seq)


def _open_room(person: Any, seat: storage.ParticipantSeat) -> int:
    if person.stage != ParticipantStage.ROOM or person.group_id is None:
        raise WrongStage(person.stage, "post a message")
    if seat.group_status != GroupStatus.RUNNING or seat.room_id is None:
        raise WrongStage(ParticipantStage.POST_SURVEY, "post a message")
    if seat.room_status == RoomStatus.PAUSED:
        raise ConversationValueError("The conversation is paused; please wait.")
    if seat.room_status in ENDED_ROOM_STATUSES:
        raise ConversationValueError("The conversation has ended.")
    return int(seat.room_id)


def leave_room(db: storage.Database, token: str, *, now: Any = None) -> Any:
    """The participant leaves their room once its minimums are met (``min_seconds`` since it
    started, ``min_messages`` sent): on to the post-survey (or out with ``completed``), their
    seat left empty (the others read that they left; the room ends when everyone has).
    :class:`NotNow` before the minimums, saying how long or how many are left."""
    person, study, definition, seat = seat_of(db, token)
    room_id = _open_room(person, seat)
    now = now or db.now()
    limits = _limits(db, study, definition, person, room_id, now)
    if limits.leave_refusal is not None:
        raise NotNow(limits.leave_refusal)
    group = storage.get_group(db, int(person.group_id))
    fields, status = end_fields(definition, "", now)
    data = {"seat": person.seat, "messages": limits.messages_sent}
    event = (StudyEventKind.LEFT_ROOM if status is None else exit_event(status), data)
    move = storage.ParticipantMove(int(person.id), {ParticipantStage.ROOM}, fields, event)
    rule = OnDropout.CONTINUE
    with translated():
        storage.exit_participant(db, move, seat_rule(db, definition, group, str(person.seat), rule))
    return _view(db, token)


def _limits(
    db: storage.Database, study: Any, definition: Any, person: Any, room_id: int, now: Any
) -> RoomLimits:
    """The person's limits in their room now, read fresh (the room's log and their group)."""
    rules = definition.room_rules(str(person.condition))
    with translated():
        events = storage.events(db, room_id)
        group = storage.get_group(db, int(person.group_id))
    due = None
    if rules.turns == TurnOrder.ORDERED:
        due = due_seat(db, study.id, definition, group, events)[0]
    return room_limits(rules, str(person.seat), events, group.started_at, now, due=due)


def answer_attention_check(
    db: storage.Database, token: str, check_id: Any, answer: Any, *, now: Any = None
) -> bool:
    """The participant's answer to the attention check on their page (``study.attention``);
    True when it is right. :class:`NotNow` when it is not open any more."""
    person, study, definition = participant(db, token)
    if person.stage != ParticipantStage.ROOM:
        raise WrongStage(person.stage, "answer this question")
    return answer_check(db, study.id, definition, person, check_id, answer, now or db.now())


def message_researcher(db: storage.Database, token: str, text: Any) -> None:
    """A participant's help message to the researcher (the monitor shows it); rate limited
    like their posts (:class:`TooFast`)."""
    person, study, definition = participant(db, token)
    check_message(text)
    rate = definition.model.participants.rate
    with translated(REFUSALS):
        wait = storage.note_post(db, int(person.id), window=rate.seconds, limit=rate.messages)
        if wait:
            raise TooFast(wait)
        storage.record_study_event(
            db,
            study.id,
            StudyEventKind.HELP,
            participant_id=int(person.id),
            data=help_data(HelpSide.PARTICIPANT, text),
        )


def _move(
    db: storage.Database,
    person: Any,
    from_stage: str,
    event: tuple[str, Any],
    act: str,
    /,
    **fields: Any,
) -> None:
    """Change the participant's fields if they are still at ``from_stage``; a second tab that
    already did the same is fine, anything else is :class:`WrongStage`."""
    with translated():
        moved = storage.update_participant(
            db, int(person.id), expected_stages={from_stage}, event=event, **fields
        )
    if moved is None:
        _moved_meanwhile(db, person, fields.get("stage"), act)


def _moved_meanwhile(db: storage.Database, person: Any, to: Any, act: str) -> None:
    """A conditional move found the participant elsewhere: fine when a second tab made the same
    move, else :class:`WrongStage`."""
    with translated():
        current = storage.get_participant(db, int(person.id)).stage
    if current != to:
        raise WrongStage(current, act)


def _view(db: storage.Database, token: str) -> Any:
    return participant_view(db, token)


__all__ = [
    "RECRUITMENT_KEYS",
    "ParticipantToken",
    "answer_attention_check",
    "answer_survey",
    "decline",
    "give_consent",
    "heartbeat",
    "join",
    "leave_room",
    "message_researcher",
    "post_as_participant",
    "split_labels",
]
