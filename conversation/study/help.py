"""The help channel: messages between a participant and the researcher, both ways, in the
study's log (``help`` events of the participant), and what the researcher has read of them.

A participant writes from their page (``participant.acts.message_researcher``, rate limited like
their posts); the researcher answers from the monitor (:func:`message_participant`), reads a participant's
thread (:func:`help_thread`) and marks it read (:func:`mark_help_read`, a ``help_read`` event
with the newest message it covers): the monitor's ``help_unread`` counts the participant's
messages after the newest of a reply or a read mark.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import storage
from conversation.access.roles import Action, Actor, require, who
from conversation.boundary import translated
from conversation.study.record import get_study, member
from conversation.text.limits import check_message
from conversation.vocabulary import StudyEventKind


class HelpSide(StrEnum):
    """Who wrote a help message (``data["from"]`` of a ``help`` event)."""

    RESEARCHER = "researcher"
    PARTICIPANT = "participant"


@dataclass(frozen=True, slots=True)
class HelpMessage:
    """One message of a participant's help thread."""

    from_researcher: bool
    text: str
    at: datetime


def help_data(side: HelpSide, text: str, **more: Any) -> dict[str, Any]:
    """The ``data`` of a help event written by ``side``."""
    return {"from": side, "text": text, **more}


def thread_of(notes: Iterable[Any]) -> list[HelpMessage]:
    """The help messages among a participant's study events, oldest first."""
    return [
        HelpMessage(_side(e) == HelpSide.RESEARCHER, str((e.data or {}).get("text", "")), e.at)
        for e in notes
        if e.kind == StudyEventKind.HELP
    ]


def unread_count(notes: Iterable[Any]) -> int:
    """How many of a participant's help messages the researcher has neither answered nor
    marked read (``notes``: the participant's ``help`` and ``help_read`` events, oldest first)."""
    unread = 0
    for event in notes:
        if event.kind == StudyEventKind.HELP_READ or _side(event) == HelpSide.RESEARCHER:
            unread = 0
        elif event.kind == StudyEventKind.HELP:
            unread += 1
    return unread


def _side(event: Any) -> str | None:
    side = (event.data or {}).get("from")
    return str(side) if side is not None else None


def message_participant(
    db: storage.Database, code: str, participant_id: int, text: Any, *, actor: Actor | None = None
) -> None:
    """A help message to one participant (their page shows it). Needs the moderator role."""
    require(actor, Action.MODERATE)
    study = get_study(db, code)
    person = member(db, study, participant_id)
    check_message(text)
    with translated():
        storage.record_study_event(
            db,
            study.id,
            StudyEventKind.HELP,
            participant_id=int(person.id),
            data=help_data(HelpSide.RESEARCHER, text, by=who(actor, "researcher")),
        )


def help_thread(
    db: storage.Database, code: str, participant_id: int, *, actor: Actor | None = None
) -> list[HelpMessage]:
    """One participant's help thread, both ways, oldest first (the monitor shows it)."""
    require(actor, Action.READ)
    study = get_study(db, code)
    person = member(db, study, participant_id)
    with translated():
        notes = storage.study_events(
            db, study.id, participant_id=int(person.id), kinds={StudyEventKind.HELP}
        )
    return thread_of(notes)


def mark_help_read(
    db: storage.Database, code: str, participant_id: int, *, actor: Actor | None = None
) -> int:
    """The researcher has read a participant's help thread: their messages so far are no
    longer unread (a ``help_read`` event, with who read them). Returns how many were unread."""
    require(actor, Action.MODERATE)
    study = get_study(db, code)
    person = member(db, study, participant_id)
    with translated():
        notes = storage.study_events(
            db,
            study.id,
            participant_id=int(person.id),
            kinds={StudyEventKind.HELP, StudyEventKind.HELP_READ},
        )
        unread = unread_count(notes)
        if unread:
            storage.record_study_event(
                db,
                study.id,
                StudyEventKind.HELP_READ,
                participant_id=int(person.id),
                data={"up_to": int(notes[-1].id or 0), "by": who(actor, "researcher")},
            )
    return unread


__all__ = [
    "HelpMessage",
    "HelpSide",
    "help_data",
    "help_thread",
    "mark_help_read",
    "message_participant",
    "thread_of",
    "unread_count",
]
