"""A study's exports: participants, recruitment ids (for payment, in their own file, with each
person's payout), the payouts line by line, the transcripts with seat provenance, the study's
log, and the surveys as EDSL ``Results``.

Lists of dicts (no pandas: a page turns them into frames). The pseudonym is the only participant
id in every export but :func:`recruitment_table`; no export holds a token (only hashes are
stored, and not exported).
"""

from __future__ import annotations

from typing import Any

import storage
from conversation.access.roles import PARTICIPANT_PREFIX
from conversation.exceptions import ConversationValueError
from conversation.study.payouts import amount_text, study_payouts
from conversation.study.record import get_study, study_definition
from conversation.vocabulary import SeatHolder, entry_of

#: Who posted the opening of a group's room (the room's host, not a person).
HOST = "host"

_TIMES = ("joined_at", "consented_at", "lobby_at", "assigned_at", "finished_at")


#: The columns of each export, in order, as docs/studies.md lists them ("Export columns"; a
#: test reads them there). ``pre_<question>`` / ``post_<question>``: one per survey question.
PARTICIPANT_COLUMNS = (
    "study",
    "pseudonym",
    "labels",
    "condition",
    "seat",
    "group",
    "room_id",
    "version",
    "consent_version",
    "stage",
    "exit_status",
    "exit_code",
    "joined_at",
    "consented_at",
    "lobby_at",
    "assigned_at",
    "finished_at",
)
RECRUITMENT_COLUMNS = (
    "pseudonym",
    "PROLIFIC_PID",
    "STUDY_ID",
    "SESSION_ID",
    "exit_status",
    "exit_code",
    "payout",
    "bonus",
)
PAYOUT_COLUMNS = ("pseudonym", "line", "label", "source", "answer", "amount", "currency")
TRANSCRIPT_COLUMNS = (
    "study",
    "condition",
    "group",
    "room_id",
    "seq",
    "kind",
    "speaker",
    "seat",
    "participant",
    "private_to",
    "content",
    "at",
    "words_per_minute",
)
LOG_COLUMNS = ("at", "kind", "pseudonym", "group_id", "data")


def participants_table(db: storage.Database, code: str) -> list[dict[str, Any]]:
    """One row per participant (:data:`PARTICIPANT_COLUMNS`): pseudonym, labels (the link's
    other parameters, as a mapping), condition, seat, group, room, definition version, stage,
    exit status and code, timings, then the survey answers (``pre_<question>``,
    ``post_<question>``)."""
    study = get_study(db, code)
    groups = {g.id: g for g in storage.list_groups(db, study.id)}
    rows = []
    for p in present(storage.list_participants(db, study.id)):
        group = groups.get(p.group_id)
        row: dict[str, Any] = {
            "study": study.code,
            "pseudonym": p.pseudonym,
            "labels": dict(p.labels or {}),
            "condition": p.condition,
            "seat": p.seat,
            "group": group.number if group else None,
            "room_id": group.room_id if group else None,
            "version": p.version,
            "consent_version": p.consent_version,
            "stage": p.stage,
            "exit_status": p.exit_status,
            "exit_code": p.exit_code,
            **{t: getattr(p, t) for t in _TIMES},
        }
        row.update({f"pre_{k}": v for k, v in (p.pre_survey or {}).items()})
        row.update({f"post_{k}": v for k, v in (p.post_survey or {}).items()})
        rows.append(row)
    return rows


def recruitment_table(db: storage.Database, code: str) -> list[dict[str, Any]]:
    """For payment only (:data:`RECRUITMENT_COLUMNS`): pseudonym, Prolific's ids, exit status
    and code, and under the study's ``[payouts]`` each person's ``payout`` (their total) and
    ``bonus`` (the part paid as a Prolific bonus), as text with two decimals (None: the study
    has no payouts; ``study.payouts`` has the rule)."""
    study = get_study(db, code)
    report = study_payouts(db, code)
    paid = {p.pseudonym: p for p in report.people} if report is not None else {}
    rows = []
    for p in present(storage.list_participants(db, study.id)):
        payout = paid.get(p.pseudonym)
        rows.append(
            {
                "pseudonym": p.pseudonym,
                "PROLIFIC_PID": (p.recruitment or {}).get("PROLIFIC_PID"),
                "STUDY_ID": (p.recruitment or {}).get("STUDY_ID"),
                "SESSION_ID": (p.recruitment or {}).get("SESSION_ID"),
                "exit_status": p.exit_status,
                "exit_code": p.exit_code,
                "payout": amount_text(payout.total) if payout else None,
                "bonus": amount_text(payout.bonus) if payout else None,
            }
        )
    return rows


def payouts_table(db: storage.Database, code: str) -> list[dict[str, Any]]:
    """Each person's payout line by line (:data:`PAYOUT_COLUMNS`): the line (``base``, a
    bonus's name, ``waiting``, ``cap``), what the person read, a bonus's source and the answer
    it read, the amount as text with two decimals (None: its answer is not stored yet), the
    currency. Pseudonyms only; empty when the study has no ``[payouts]``."""
    report = study_payouts(db, code)
    if report is None:
        return []
    return [
        {
            "pseudonym": person.pseudonym,
            "line": line.name,
            "label": line.label,
            "source": line.source,
            "answer": line.answer,
            "amount": None if line.amount is None else amount_text(line.amount),
            "currency": report.currency,
        }
        for person in report.people
        for line in person.lines
    ]


def present(people: Any) -> list[Any]:
    """``people`` without those who withdrew: exports leave them out (issue 34)."""
    return [p for p in people if getattr(p, "withdrawn_at", None) is None]


def withdrawn_pseudonyms(db: storage.Database, study_id: int) -> set[str]:
    """The pseudonyms of the study's people who withdrew."""
    return {
        p.pseudonym
        for p in storage.list_participants(db, study_id)
        if getattr(p, "withdrawn_at", None) is not None
    }


def transcripts_table(db: storage.Database, code: str) -> list[dict[str, Any]]:
    """Every message of the study's rooms (:data:`TRANSCRIPT_COLUMNS`) with its condition,
    group, seat and who held the seat (``participant``: a participant's pseudonym, ``agent``,
    or ``host`` for the opening), and for an agent's message the typing pace people saw it at
    (``words_per_minute``, the condition's ``room.words_per_minute`` for that agent; None:
    shown at once)."""
    study = get_study(db, code)
    definition = study_definition(db, study)
    gone = withdrawn_pseudonyms(db, study.id)
    rows = []
    for group in storage.list_groups(db, study.id):
        if group.room_id is None:
            continue
        seats = set(definition.condition(group.condition).seats)
        pace = definition.room_rules(group.condition).words_per_minute
        for event in storage.events(db, int(group.room_id)):
            entry = entry_of(event)
            if not entry.is_message:
                continue  # what was said: people's messages and agents' finished turns
            by = entry.by or ""
            holder = (
                SeatHolder.AGENT
                if entry.is_turn
                else by.removeprefix(PARTICIPANT_PREFIX)
                if by.startswith(PARTICIPANT_PREFIX)
                else HOST
            )
            if holder in gone:
                continue  # a withdrawn person's messages leave with them
            rows.append(
                {
                    "study": study.code,
                    "condition": group.condition,
                    "group": group.number,
                    "room_id": group.room_id,
                    "seq": event.seq,
                    "kind": entry.kind,
                    "speaker": event.speaker,
                    "seat": event.speaker if event.speaker in seats else None,
                    "participant": holder,
                    "private_to": event.visible_to,
                    "content": event.content,
                    "at": event.updated_at,
                    "words_per_minute": _pace(pace, event.speaker) if entry.is_turn else None,
                }
            )
    return rows


def _pace(pace: Any, speaker: str) -> int | None:
    """The pace an agent's message was shown at (None: at once): the room's ``words_per_minute``,
    one for every agent or ``{agent: pace}``."""
    found = pace.get(speaker, 0) if isinstance(pace, dict) else pace
    return int(found) or None


def study_events_table(db: storage.Database, code: str) -> list[dict[str, Any]]:
    """The study's log (:data:`LOG_COLUMNS`: assignments with their seeds, absences, removals,
    help messages), with pseudonyms."""
    study = get_study(db, code)
    people = storage.list_participants(db, study.id)
    names = {p.id: p.pseudonym for p in present(people)}
    gone = {p.id for p in people} - set(names)
    return [
        {
            "at": e.at,
            "kind": e.kind,
            "pseudonym": names.get(e.participant_id),
            "group_id": e.group_id,
            "data": e.data,
        }
        for e in storage.study_events(db, study.id)
        if e.participant_id not in gone
    ]


def survey_answers(db: storage.Database, code: str, which: str = "post") -> int:
    """How many people answered the ``pre`` or ``post`` survey (0: :func:`survey_results` has
    no row, and EDSL cannot tabulate an empty ``Results``)."""
    _check_which(which)
    study = get_study(db, code)
    field = "pre_survey" if which == "pre" else "post_survey"
    return sum(bool(getattr(p, field)) for p in present(storage.list_participants(db, study.id)))


def _check_which(which: Any) -> None:
    if which not in ("pre", "post"):
        raise ConversationValueError(f"which={which!r} must be 'pre' or 'post'")


def survey_results(db: storage.Database, code: str, which: str = "post") -> Any:
    """A survey's answers as EDSL ``Results``: one result per participant who answered, the
    participant as the agent (pseudonym; condition and seat as traits), the answers as theirs.
    No model is asked (the model column names the offline model)."""
    from edsl import Agent, Results, Scenario, Survey
    from edsl.results import Result

    from conversation.models import OfflineModel
    from conversation.study.definition.surveys import edsl_question
    from conversation.text.safety import neutralize_value

    _check_which(which)
    study = get_study(db, code)
    model = study_definition(db, study).model
    specs = model.pre_survey if which == "pre" else model.post_survey
    survey = Survey([edsl_question(q) for q in specs]) if specs else Survey([])
    rows = []
    for p in present(storage.list_participants(db, study.id)):
        answers = p.pre_survey if which == "pre" else p.post_survey
        if not answers:
            continue
        traits = {"condition": p.condition or "", "seat": p.seat or ""}
        rows.append(
            Result(
                agent=Agent(name=p.pseudonym, traits=neutralize_value(traits)),
                scenario=Scenario({"study": study.code, "participant": p.pseudonym}),
                model=OfflineModel(),
                iteration=0,
                answer=neutralize_value(dict(answers)),
                prompt={},
                raw_model_response={},
                survey=survey,
            )
        )
    return Results(survey=survey, data=rows)


__all__ = [
    "LOG_COLUMNS",
    "PARTICIPANT_COLUMNS",
    "PAYOUT_COLUMNS",
    "RECRUITMENT_COLUMNS",
    "TRANSCRIPT_COLUMNS",
    "participants_table",
    "payouts_table",
    "present",
    "recruitment_table",
    "study_events_table",
    "survey_answers",
    "survey_results",
    "transcripts_table",
    "withdrawn_pseudonyms",
]
