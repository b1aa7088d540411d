"""A study's payouts read from storage: :func:`study_payouts` (everyone's lines and the
total), :func:`person_earnings` (one person's, for their exit page) and
:func:`prolific_bonus_csv` (Prolific's bulk bonus file).

What a payout reads, all stored: the definition in force (its ``[payouts]``), each person's
exit status, seat, lobby times and survey answers, and the analysis answers about their room.
An analysis answer is found by the bonus's ``question``: the newest analysis of the study's
experiment whose question has that name and that answered about the room (a re-run replaces
the older answer). Withdrawn people are left out. Nothing here writes: the same stored data
gives the same report and the same file, byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import storage
from conversation.study.definition.payouts import BonusSource, PayoutsIn
from conversation.study.payouts.money import (
    ZERO,
    Person,
    PersonPayout,
    amount_text,
    person_payout,
)
from conversation.study.record import Study, get_study, study_definition
from conversation.vocabulary import AnswerState

#: A recruitment id the bonus file carries: Prolific's are 24 hexadecimal digits. Anything
#: else (a comma, a quote, a leading ``=``) could break the file or a spreadsheet opening it.
_PID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class PayoutReport:
    """Every present person's payout in the study (in the order they joined) and the total."""

    study: str
    currency: str
    people: tuple[PersonPayout, ...]
    total: Decimal

    @property
    def bonus_total(self) -> Decimal:
        """What the Prolific bonus file pays in all."""
        return sum((p.bonus for p in self.people), ZERO)


@dataclass(frozen=True, slots=True)
class Earnings:
    """What a person's exit page shows: the currency, their total and its lines (a line's
    amount None: paid once its answer is known, e.g. an analysis run after the study)."""

    currency: str
    total: Decimal
    lines: tuple[tuple[str, Decimal | None], ...]


def _analysis_questions(rules: PayoutsIn) -> set[str]:
    return {b.question for b in rules.bonuses if b.source == BonusSource.ANALYSIS}


def analysis_answers(
    db: storage.Database, study: Study, names: Collection[str], room_ids: Iterable[int]
) -> dict[int, dict[str, Any]]:
    """``{room id: {question name: answer}}`` for the study's rooms (module docstring)."""
    rooms = sorted(set(room_ids))
    if not names or not rooms or study.experiment_id is None:
        return {}
    found: dict[int, dict[str, Any]] = {}
    # Newest first: the first answer found for a (room, question) is the one in force.
    for analysis in storage.list_analyses(db, experiment_id=study.experiment_id, limit=None):
        name = (analysis.question or {}).get("name")
        if not isinstance(name, str) or name not in names:
            continue
        for row in storage.answers(db, int(analysis.id or 0), room_ids=rooms):
            if row.state == AnswerState.ANSWERED:
                found.setdefault(row.room_id, {}).setdefault(name, row.answer)
    return found


def _person(row: Any, analysis: dict[str, Any]) -> Person:
    return Person(
        pseudonym=row.pseudonym,
        recruitment_id=(row.recruitment or {}).get("PROLIFIC_PID") or row.recruitment_id,
        seat=row.seat,
        exit_status=row.exit_status,
        lobby_at=row.lobby_at,
        assigned_at=row.assigned_at,
        finished_at=row.finished_at,
        pre_survey=dict(row.pre_survey or {}),
        post_survey=dict(row.post_survey or {}),
        analysis=analysis,
    )


def payout_rules(db: storage.Database, study: Study) -> PayoutsIn | None:
    """The study's ``[payouts]`` in force (None: the study pays nothing through it)."""
    return study_definition(db, study).model.payouts


def study_payouts(db: storage.Database, code: str) -> PayoutReport | None:
    """Every present person's payout (see the module docstring); None when the study's
    definition has no ``[payouts]``. ``StudyRefused`` for an unknown code."""
    study = get_study(db, code)
    rules = payout_rules(db, study)
    if rules is None:
        return None
    people = [
        p
        for p in storage.list_participants(db, study.id)
        if getattr(p, "withdrawn_at", None) is None
    ]
    groups = {g.id: g.room_id for g in storage.list_groups(db, study.id)}
    room_of = {p.id: groups.get(p.group_id) for p in people}
    answers = analysis_answers(
        db, study, _analysis_questions(rules), (r for r in room_of.values() if r is not None)
    )
    payouts = tuple(
        person_payout(rules, _person(p, answers.get(room_of[p.id] or -1, {}))) for p in people
    )
    return PayoutReport(study.code, rules.currency, payouts, sum((p.total for p in payouts), ZERO))


def person_earnings(db: storage.Database, study: Study, row: Any) -> Earnings | None:
    """One person's earnings for their exit page (``row``: their stored participant); None when
    the study has no ``[payouts]``."""
    rules = payout_rules(db, study)
    if rules is None:
        return None
    names = _analysis_questions(rules)
    analysis: dict[str, Any] = {}
    if names and row.group_id is not None:
        room_id = storage.get_group(db, int(row.group_id)).room_id
        if room_id is not None:
            analysis = analysis_answers(db, study, names, [int(room_id)]).get(int(room_id), {})
    payout = person_payout(rules, _person(row, analysis))
    return Earnings(
        rules.currency, payout.total, tuple((line.label, line.amount) for line in payout.lines)
    )


def prolific_bonus_csv(db: storage.Database, code: str) -> str:
    """Prolific's bulk bonus file: one ``PROLIFIC_PID,amount`` line per person with a bonus
    above 0.00 (the amount in the study's currency, two decimals, no header, no currency sign),
    in the order people joined. People without a PROLIFIC_PID (or with one that is not letters,
    digits, ``-`` and ``_``) and withdrawn people are left out; a study without ``[payouts]``
    gives an empty file."""
    report = study_payouts(db, code)
    if report is None:
        return ""
    return "".join(
        f"{p.recruitment_id},{amount_text(p.bonus)}\n"
        for p in report.people
        if p.recruitment_id and _PID.fullmatch(p.recruitment_id) and p.bonus > ZERO
    )


__all__ = [
    "Earnings",
    "PayoutReport",
    "analysis_answers",
    "payout_rules",
    "person_earnings",
    "prolific_bonus_csv",
    "study_payouts",
]
