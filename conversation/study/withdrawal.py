"""Withdrawal (issue 34): a person leaves the study and their data go, from their page's link
(:func:`withdraw`) or as the researcher's act (:func:`withdraw_participant`).

What it does:
- a person still on their path leaves with the ``withdrawn`` exit status (no completion code
  unless the definition gives one), their seat handled by the study's dropout rule, like any
  exit (one write);
- then, in one write: their recruitment id, labels and survey answers are cleared, their
  signals and help messages deleted, their messages read the study's marker (``[withdrawn]``)
  or are removed (``withdrawal.messages``), the agents' turns of the exchanges they opened too
  when ``withdrawal.agent_replies = "redact"`` (kept by default), and an audit note records
  who asked, when, the rule and the counts, never the content;
- then what was derived from their texts: model cache entries whose prompts hold one are
  deleted, their room's follow-up answers have the text replaced.
A person withdraws once (a second call changes nothing); later exports and packages leave
them out (``withdrawn_at``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import storage
from conversation.access.roles import PARTICIPANT_PREFIX, Action, Actor, require, who
from conversation.boundary import translated
from conversation.study.clock.seats import leave
from conversation.study.definition.document import StudyDefinition
from conversation.study.definition.instrument import AgentReplies, WithdrawnMessages
from conversation.study.participant.identity import participant
from conversation.study.record import Study, get_study, member, study_definition
from conversation.text.limits import MAX_STOP_REASON_CHARS, check_text
from conversation.vocabulary import (
    ACTIVE_STAGES,
    AgentTurn,
    ExitStatus,
    HumanMessage,
    ParticipantStage,
    StudyEventKind,
    entry_of,
)


@dataclass(frozen=True, slots=True)
class WithdrawalReport:
    """What a withdrawal did: the person's pseudonym, whether it happened now (False: they had
    withdrawn before), and the counts."""

    pseudonym: str
    withdrawn: bool
    messages: int = 0
    agent_turns: int = 0
    signals: int = 0
    cache_entries: int = 0
    answers: int = 0


def withdraw(db: storage.Database, token: str) -> Any:
    """The participant withdraws (their page's link); returns their page's view (the exit)."""
    from conversation.study.participant.view import participant_view

    person, study, definition = participant(db, token)
    _withdraw(db, study, definition, person, by=f"{PARTICIPANT_PREFIX}{person.pseudonym}")
    return participant_view(db, token)


def withdraw_participant(
    db: storage.Database,
    code: str,
    participant_id: int,
    *,
    reason: str = "",
    actor: Actor | None = None,
) -> WithdrawalReport:
    """Withdraw a participant on their behalf (they asked the researcher); the moderator role."""
    require(actor, Action.CONTROL)
    check_text(reason, "reason", MAX_STOP_REASON_CHARS, empty=True)
    study = get_study(db, code)
    definition = study_definition(db, study)
    person = member(db, study, participant_id)
    return _withdraw(db, study, definition, person, by=who(actor, "researcher"), reason=reason)


def _withdraw(
    db: storage.Database,
    study: Study,
    definition: StudyDefinition,
    person: Any,
    *,
    by: str,
    reason: str = "",
) -> WithdrawalReport:
    if person.withdrawn_at is not None:
        return WithdrawalReport(person.pseudonym, withdrawn=False)
    person = _exit_if_on_path(db, study, definition, person, by)
    rule = definition.model.withdrawal
    room_id = _room_of(db, person)
    mine, replies = _their_events(db, room_id, person.pseudonym)
    texts = [e.content for e in mine]
    redact_replies = rule.agent_replies == AgentReplies.REDACT
    removing = rule.messages == WithdrawnMessages.REMOVE
    ids = [int(e.id) for e in mine]
    reply_ids = [int(e.id) for e in replies] if redact_replies else []
    note = storage.StudyNote(
        StudyEventKind.DATA_DELETED,
        {
            "by": by,
            "reason": reason,
            "messages": len(ids),
            "rule": str(rule.messages),
            "agent_replies": str(rule.agent_replies),
            "agent_turns": len(reply_ids),
        },
        participant_id=None,  # the note outlives what it is about
    )
    withdrawal = storage.Withdrawal(
        participant_id=int(person.id),
        room_id=room_id,
        redact=reply_ids if removing else [*ids, *reply_ids],
        remove=ids if removing else [],
        marker=rule.marker,
        fields={},
        content_kinds=[StudyEventKind.HELP, StudyEventKind.HELP_READ],
        note=note,
    )
    with translated():
        counts = storage.withdraw_participant(db, study.id, withdrawal)
        derived = storage.redact_texts(
            db, [*texts, *(e.content for e in replies if redact_replies)], room_id=room_id,
            marker=rule.marker,
        )  # fmt: skip
    return WithdrawalReport(
        person.pseudonym,
        withdrawn=True,
        messages=len(ids),
        agent_turns=len(reply_ids),
        signals=counts.signals,
        cache_entries=derived["cache_entries"],
        answers=derived["answers"],
    )


def _exit_if_on_path(
    db: storage.Database, study: Study, definition: StudyDefinition, person: Any, by: str
) -> Any:
    """A person still on their path leaves with ``withdrawn`` (their seat by the dropout rule);
    the person as read after."""
    for _ in range(3):  # a person who moves on meanwhile (a tab, the clock) is read again
        if person.stage not in ACTIVE_STAGES:
            return person
        stage = ParticipantStage(person.stage)
        group = None
        if stage == ParticipantStage.ROOM and person.group_id is not None:
            with translated():
                group = storage.get_group(db, int(person.group_id))
        rule = definition.model.participants.on_dropout
        data = {"by": by, "stage": stage}
        status = ExitStatus.WITHDRAWN
        if leave(db, definition, person, status, stage, data, db.now(), group=group, rule=rule):
            break
        person = member(db, study, int(person.id))
    return member(db, study, int(person.id))


def _room_of(db: storage.Database, person: Any) -> int | None:
    if person.group_id is None:
        return None
    with translated():
        group = storage.get_group(db, int(person.group_id))
    return None if group.room_id is None else int(group.room_id)


def _their_events(
    db: storage.Database, room_id: int | None, pseudonym: str
) -> tuple[list[Any], list[Any]]:
    """The person's messages in their room, and the agents' turns of the exchanges they opened
    (a person's message opens an activity)."""
    if room_id is None:
        return [], []
    with translated():
        rows = storage.events(db, room_id)
    author = f"{PARTICIPANT_PREFIX}{pseudonym}"
    mine, opened = [], set()
    for row in rows:
        entry = entry_of(row)
        if isinstance(entry, HumanMessage) and entry.by == author:
            mine.append(row)
            opened.add(row.activity)
    replies = [
        row for row in rows if isinstance(entry_of(row), AgentTurn) and row.activity in opened
    ]
    return mine, replies


__all__ = ["WithdrawalReport", "withdraw", "withdraw_participant"]
