"""What one participant's page shows: :func:`participant_view`.

Only what their seat may see: the room's messages that are public, addressed to their seat, or
their own; an agent's message only once committed (a moderated draft only once approved; while
an agent drafts, "<name> is typing"); with ``words_per_minute``, an agent's message appears only
when a person typing at that speed would have finished it (until then its speaker is typing).
Never another room's messages, a researcher's controls, a recruitment id or a token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import storage
from conversation.boundary import translated
from conversation.study.clock.attention import ATTENTION_KINDS, AttentionPrompt, pending_check
from conversation.study.clock.limits import RoomLimits, room_limits
from conversation.study.clock.turns import due_seat
from conversation.study.definition.document import StudyDefinition
from conversation.study.definition.schema import TurnOrder
from conversation.study.errors import REFUSALS
from conversation.study.help import HelpMessage, thread_of
from conversation.study.participant.checks import CheckFeedback, feedback_of, survey_word
from conversation.study.participant.identity import token_hash
from conversation.study.payouts.report import Earnings, person_earnings
from conversation.study.record import Study, study_definition
from conversation.vocabulary import (
    SURVEY_STAGES,
    HumanMessage,
    Notice,
    NoticeKind,
    ParticipantStage,
    StudyEventKind,
    entry_of,
)

#: A question's parts the page is never sent (a check's key, its explanation until a wrong try).
_NOT_SENT = {"correct", "explanation", "attempts"}
#: The study log's entries about the person that their page shows.
PERSON_NOTES = frozenset({StudyEventKind.CHECK_ATTEMPT, *ATTENTION_KINDS})

_NOTICES = {
    NoticeKind.STOPPED: "The conversation has ended.",
    NoticeKind.TERMINATED: "The conversation has ended.",
    NoticeKind.PAUSED: "The conversation is paused.",
    NoticeKind.RESUMED: "The conversation continues.",
}
_SEAT_NOTICES = {
    StudyEventKind.SEAT_TAKEN_BY_AGENT: "{seat}'s participant left; an AI agent now plays {seat}.",
    StudyEventKind.SEAT_LEFT: "{seat}'s participant left.",
    StudyEventKind.ROOM_PAUSED: "{seat}'s participant left; the conversation is paused.",
    StudyEventKind.ROOM_STOPPED: "{seat}'s participant left; the conversation has ended.",
    # The consent promised other participants: a seat an agent plays from the start is said.
    StudyEventKind.FILLED_WITH_AGENTS: (
        "No other participant could join in time: an AI agent plays {seat}."
    ),
}


@dataclass(frozen=True, slots=True)
class SeenMessage:
    seq: int
    speaker: str
    content: str
    kind: str  # "human", "agent" or "system"
    own: bool
    private: bool
    at: datetime


@dataclass(frozen=True, slots=True)
class ExitInfo:
    status: str
    code: str
    redirect: str | None
    #: What the person earned under the study's ``[payouts]`` (None: the study has none).
    earnings: Earnings | None = None


@dataclass(frozen=True, slots=True)
class ParticipantView:
    """Everything the participant's page shows, for the stage they are at."""

    stage: str
    study_name: str
    pseudonym: str
    consent: str | None = None
    questions: list[dict[str, Any]] = field(default_factory=list)
    waiting_for: int | None = None
    lobby_seconds_left: float | None = None
    seat: str | None = None
    instructions: str | None = None
    room_id: int | None = None
    messages: list[SeenMessage] = field(default_factory=list)
    typing: list[str] = field(default_factory=list)
    your_turn: bool = False
    time_left: float | None = None
    help: list[HelpMessage] = field(default_factory=list)
    exit: ExitInfo | None = None
    notice: str | None = None
    heartbeat_seconds: int = 10
    #: Whether the page records bot and AI-use signals with each message and survey, and the
    #: honeypot instruction it places out of people's sight (issue 34; never shown to them).
    record_signals: bool = True
    honeypot: str | None = None
    #: What was stored when the view was read (``storage.participant_marker``), when it was
    #: read, and the next time it changes by the clock alone (a paced message appears).
    marker: tuple[Any, ...] = ()
    as_of: datetime | None = None
    changes_at: datetime | None = None
    #: The room's rules for this person now (``limits``): may they leave, how many messages
    #: they must and may still send, whether their box is open, the turn banner.
    limits: RoomLimits | None = None
    #: Surveys: the answers of the surveys before this one (a question's ``show_if`` may read
    #: them), and after a wrong try at a check, each wrong question's explanation.
    earlier_answers: dict[str, Any] = field(default_factory=dict)
    check_feedback: list[CheckFeedback] = field(default_factory=list)
    #: The room: an attention check waiting for the person's answer (a popup), if any.
    attention: AttentionPrompt | None = None

    def time_left_at(self, now: datetime) -> float | None:
        """The room's time left at ``now`` (the view holds it as of ``as_of``)."""
        return _left_at(self.time_left, self.as_of, now)

    def leave_in_at(self, now: datetime) -> float | None:
        """Seconds until the person may leave at ``now`` (the minimum time; None: no wait)."""
        left = _left_at(self.limits.leave_in if self.limits else None, self.as_of, now)
        return left or None


def _left_at(seconds: float | None, as_of: datetime | None, now: datetime) -> float | None:
    if seconds is None or as_of is None:
        return seconds
    return max(0.0, seconds - (now - as_of).total_seconds())


def participant_view(
    db: storage.Database, token: str, *, now: datetime | None = None
) -> ParticipantView:
    """The participant's page now (see the module docstring), from one read of the database;
    :class:`NotAParticipant` for a token that is not one."""
    hashed = token_hash(token)
    with translated(REFUSALS):
        # The marker first: a change stored between the two reads is shown and still makes
        # the page read again once (``view_is_current``), never missed.
        marker = storage.participant_marker(db, hashed)
        state = storage.participant_state(
            db, hashed, group_kinds=set(_SEAT_NOTICES), person_kinds=PERSON_NOTES
        )
    person = state.participant
    definition = study_definition(db, Study.of(state.study))
    now = now or db.now()
    model = definition.model
    base: dict[str, Any] = {
        "marker": marker,
        "as_of": now,
        "stage": person.stage,
        "study_name": model.name,
        "pseudonym": person.pseudonym,
        "help": thread_of(state.notes),
        "heartbeat_seconds": model.participants.heartbeat_seconds,
        "record_signals": model.signals.record,
        "honeypot": model.signals.honeypot.instruction if model.signals.honeypot else None,
    }
    stage = person.stage
    if stage == ParticipantStage.CONSENT:
        return ParticipantView(**base, consent=model.consent)
    if stage in SURVEY_STAGES:
        questions = model.pre_survey if stage == ParticipantStage.PRE_SURVEY else model.post_survey
        return ParticipantView(
            **base,
            questions=[_asked(q) for q in questions],
            earlier_answers=dict(person.pre_survey or {}),
            check_feedback=feedback_of(questions, state.notes, survey_word(stage)),
        )
    if stage == ParticipantStage.LOBBY:
        return ParticipantView(**base, **_lobby(state, definition, now))
    if stage == ParticipantStage.EXIT or state.group is None:
        redirect = model.exit.redirect
        code = person.exit_code or ""
        # No code (a withdrawal): nothing to hand to the recruiter, so no redirect either.
        link = redirect.replace("{code}", code) if redirect and code else None
        earnings = person_earnings(db, Study.of(state.study), person)
        info = ExitInfo(person.exit_status or "", code, link, earnings)
        return ParticipantView(**base, exit=info)
    return ParticipantView(**base, **_room(db, state, definition, now))


def _asked(question: Any) -> dict[str, Any]:
    """A survey question as the page gets it: EDSL's spec and its ``show_if`` (the page asks
    it only when earlier answers meet it), never its right answer."""
    return question.model_dump(exclude_none=True, exclude=_NOT_SENT)


def view_is_current(
    db: storage.Database, token: str, view: ParticipantView, *, now: datetime | None = None
) -> bool:
    """Whether ``view`` still shows what :func:`participant_view` would: nothing it depends on
    was stored since (its marker, one small read) and the clock has not reached a change of its
    own (a paced message appearing). The lobby's view also depends on other people's arrivals:
    it is never current. :class:`NotAParticipant` for a token that is no longer one."""
    if view.stage == ParticipantStage.LOBBY or not view.marker:
        return False
    if view.changes_at is not None and (now or db.now()) >= view.changes_at:
        return False
    with translated(REFUSALS):
        return storage.participant_marker(db, token_hash(token)) == view.marker


def _lobby(
    state: storage.ParticipantState, definition: StudyDefinition, now: datetime
) -> dict[str, Any]:
    target = definition.model.experiment.groups
    sizes = [len(c.seats) for c in definition.conditions if state.groups.get(c.label, 0) < target]
    needed = max(0, min(sizes) - state.lobby) if sizes else None
    person = state.participant
    waited = (now - (person.lobby_at or person.joined_at)).total_seconds()
    left = max(0.0, definition.model.lobby.timeout_seconds - waited)
    return {"waiting_for": needed, "lobby_seconds_left": left}


def _room(
    db: storage.Database,
    state: storage.ParticipantState,
    definition: StudyDefinition,
    now: datetime,
) -> dict[str, Any]:
    group, person = state.group, state.participant
    assert group is not None
    seat = str(person.seat)
    condition = definition.condition(str(person.condition))
    rules = definition.room_rules(condition.label)
    messages, typing, reveal_at = seen(state.events, seat, rules.words_per_minute, now)
    limit = timedelta(seconds=rules.time_limit_seconds)
    due = None
    if rules.turns == TurnOrder.ORDERED:
        due = due_seat(db, state.study.id or 0, definition, group, state.events)[0]
    limits = room_limits(rules, seat, state.events, group.started_at, now, due=due)
    notices = [e for e in state.notes if e.kind in _SEAT_NOTICES]
    notice = None
    if notices:
        last = notices[-1]
        data = last.data or {}
        seats = data.get("seats") or [data.get("seat", "A participant")]
        notice = _SEAT_NOTICES[StudyEventKind(last.kind)].format(seat=" and ".join(seats))
    attention = pending_check(state.notes)
    closes = attention.deadline if attention is not None else None
    changes = [t for t in (reveal_at, _at(now, limits.leave_in), closes) if t is not None]
    return {
        "seat": seat,
        "instructions": (condition.instructions or {}).get(seat),
        "room_id": int(group.room_id or 0),
        "messages": messages,
        "typing": typing,
        "your_turn": due == seat,
        "time_left": max(0.0, (group.started_at + limit - now).total_seconds()),
        "notice": notice,
        "changes_at": min(changes) if changes else None,
        "limits": limits,
        "attention": attention,
    }


def _at(now: datetime, seconds: float | None) -> datetime | None:
    return None if seconds is None else now + timedelta(seconds=seconds)


def seen(
    events: list[Any], seat: str, words_per_minute: int | Mapping[str, int], now: datetime
) -> tuple[list[SeenMessage], list[str], datetime | None]:
    """The messages seat ``seat`` may see among a room's ``events``, who is typing, and when
    the first paced message still held back appears (None: none is).
    ``words_per_minute``: every agent's pace, or ``{agent: pace}`` (0 or absent: unpaced)."""
    messages: list[SeenMessage] = []
    typing: list[str] = []
    reveal_at: datetime | None = None
    shown_until: datetime | None = None  # paced: an agent's message after the one before it
    for event in events:
        entry = entry_of(event)
        if not entry.visible_to(seat):
            continue
        own = isinstance(entry, HumanMessage) and entry.speaker == seat
        if entry.is_turn:
            if entry.is_open:  # an agent at work (a moderated draft waits for approval)
                typing.append(entry.speaker)
                continue
            if not (entry.is_message and entry.content):
                continue
            pace = (
                words_per_minute.get(entry.speaker, 0)
                if isinstance(words_per_minute, Mapping)
                else words_per_minute
            )
            if pace:
                shown_until = _typing_until(event, pace, shown_until)
                if shown_until > now:
                    typing.append(entry.speaker)
                    reveal_at = shown_until if reveal_at is None else min(reveal_at, shown_until)
                    continue
        elif isinstance(entry, Notice):
            notice = _NOTICES.get(entry.notice) if isinstance(entry.notice, NoticeKind) else None
            if notice is not None:
                messages.append(
                    SeenMessage(entry.seq, "", notice, entry.kind, False, False, event.updated_at)
                )
            continue
        messages.append(
            SeenMessage(
                entry.seq,
                entry.speaker,
                entry.content,
                entry.kind,
                own,
                entry.is_private,
                event.updated_at,
            )
        )
    return messages, list(dict.fromkeys(typing)), reveal_at


def _typing_until(event: Any, words_per_minute: int, previous: datetime | None) -> datetime:
    """When a person typing at ``words_per_minute`` would have finished ``event`` (starting
    when it was committed, or when the agent's previous paced message appeared)."""
    seconds = 60.0 * max(1, event.words or len(event.content.split())) / words_per_minute
    start = event.updated_at if previous is None else max(event.updated_at, previous)
    return start + timedelta(seconds=seconds)  # type: ignore[no-any-return]


__all__ = [
    "ExitInfo",
    "ParticipantView",
    "SeenMessage",
    "participant_view",
    "seen",
    "view_is_current",
]
