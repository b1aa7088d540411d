"""What a participant's page sends about how a message or a survey answer was written, checked
at the door (``MessageSignalsIn``, ``SurveySignalsIn``) and stored with it
(``participant_signals``): signals, never verdicts. Nothing here is shown to the participant
and nothing is decided from it; exclusions are the analysis plan's (``signals.summary``).

Per message: how many characters were pasted and typed, how often the page lost focus while
the message was being composed, how long it was composed (first keystroke to send), and the
reply latency to the partner's last message (measured here, from the room's log: the time from
the last message of another speaker to this one). Per survey: the characters pasted into each
answer. Either way, a message or free-text answer using the honeypot's word (the definition's
``signals.honeypot``: an instruction only automation reads) is recorded as followed.

A message's signals are written right after the message (its seq): a crash between the two
writes loses the signals, never the message.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

import storage
from conversation.boundary import translated
from conversation.exceptions import ConversationError
from conversation.study.definition.document import StudyDefinition
from conversation.study.record import Study
from conversation.text.schema import DoorModel, validated
from conversation.vocabulary import SignalKind, entries_of

log = logging.getLogger(__name__)

MAX_MS = 24 * 3_600 * 1_000
MAX_CHARS = 1_000_000
_Chars = Annotated[int, Field(ge=0, le=MAX_CHARS)]


class MessageSignalsIn(DoorModel):
    """A message's signals, as the page sends them."""

    pasted_chars: _Chars = 0
    typed_chars: _Chars = 0
    focus_lost: int = Field(default=0, ge=0, le=100_000)
    """How many times the page lost focus (another tab, another window) while composing."""
    compose_ms: int | None = Field(default=None, ge=0, le=MAX_MS)
    """First keystroke (or paste) to send."""


class SurveySignalsIn(DoorModel):
    """A survey's signals: the characters pasted into each answer, by question name."""

    pasted: dict[str, _Chars] = {}


def _place(loc: Any) -> str:
    return "signals " + ".".join(str(p) for p in loc) if loc else "signals"


def message_signals(signals: Any) -> MessageSignalsIn:
    """A message's signals checked (``ConversationValueError`` naming the field)."""
    return validated(MessageSignalsIn, dict(signals or {}), place=_place)


def survey_signals(signals: Any) -> SurveySignalsIn:
    """A survey's signals checked (``ConversationValueError`` naming the field)."""
    return validated(SurveySignalsIn, dict(signals or {}), place=_place)


def followed_honeypot(definition: StudyDefinition, text: Any) -> bool:
    """Whether ``text`` uses the honeypot's word (a whole word, any case)."""
    honeypot = definition.model.signals.honeypot
    if honeypot is None or not isinstance(text, str):
        return False
    return re.search(rf"\b{re.escape(honeypot.word)}\b", text, re.IGNORECASE) is not None


def record_message(
    db: storage.Database,
    study: Study,
    definition: StudyDefinition,
    person: Any,
    room_id: int,
    seq: int,
    text: str,
    signals: MessageSignalsIn | None,
) -> None:
    """Store a posted message's signals (when the study records them) and a honeypot it
    followed. A failure is logged: the message stands without them."""
    try:
        if _recorded(db, study, person, room_id, seq):
            return  # the same post sent again (its request id): recorded once
        if signals is not None and definition.model.signals.record:
            data = {
                **signals.model_dump(),
                "chars": len(text),
                "reply_ms": _reply_ms(db, room_id, seq),
            }
            _store(db, study, person, SignalKind.MESSAGE, data, room_id=room_id, seq=seq)
        if followed_honeypot(definition, text):
            data = {"where": "message", "seq": seq}
            _store(db, study, person, SignalKind.HONEYPOT, data, room_id=room_id, seq=seq)
    except ConversationError as exc:  # the message is in; its signals are not worth its loss
        log.warning("signals of participant %s not stored: %s", person.pseudonym, exc)


def record_survey(
    db: storage.Database,
    study: Study,
    definition: StudyDefinition,
    person: Any,
    survey: str,
    answers: Mapping[str, Any],
    signals: SurveySignalsIn | None,
) -> None:
    """Store a survey's signals (the answers pasted into) and a honeypot followed in it."""
    if signals is not None and definition.model.signals.record:
        pasted = {q: n for q, n in signals.pasted.items() if q in answers and n > 0}
        _store(db, study, person, SignalKind.SURVEY, {"survey": survey, "pasted": pasted})
    followed = sorted(q for q, a in answers.items() if followed_honeypot(definition, a))
    if followed:
        data = {"where": f"{survey}_survey", "questions": followed}
        _store(db, study, person, SignalKind.HONEYPOT, data)


def _store(
    db: storage.Database,
    study: Study,
    person: Any,
    kind: SignalKind,
    data: dict[str, Any],
    **at: Any,
) -> None:
    with translated():
        storage.record_signals(db, study.id, int(person.id), kind, data, **at)


def _recorded(db: storage.Database, study: Study, person: Any, room_id: int, seq: int) -> bool:
    with translated():
        records = storage.participant_signals(db, study.id, participant_id=int(person.id))
    return any(r.room_id == room_id and r.seq == seq for r in records)


def _reply_ms(db: storage.Database, room_id: int, seq: int) -> int | None:
    """Milliseconds from the last message of another speaker before ``seq`` to ``seq``."""
    with translated():
        rows = storage.events(db, room_id)
    mine = next((r for r in rows if r.seq == seq), None)
    if mine is None:
        return None
    before = [e for e in entries_of(r for r in rows if r.seq < seq) if e.is_message]
    partner = next((e for e in reversed(before) if e.row.speaker != mine.speaker), None)
    if partner is None:
        return None
    return max(0, int((mine.created_at - partner.row.created_at).total_seconds() * 1000))


__all__ = [
    "MessageSignalsIn",
    "SurveySignalsIn",
    "followed_honeypot",
    "message_signals",
    "record_message",
    "record_survey",
    "survey_signals",
]
