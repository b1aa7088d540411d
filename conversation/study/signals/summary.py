"""A study's signals summarised per person (the monitor's and the exports' ``signals`` table:
one column per ``SignalMeasure``), and the preregistered exclusion rules applied to them as a
filter (:func:`exclusions`: who each rule excludes, counts by condition). Signals, not
verdicts: nothing here changes a person's path or pay; the analysis reports its results with
and without the exclusions.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

import storage
from conversation.boundary import translated
from conversation.study.record import get_study, study_definition
from conversation.study.researcher.exports import present
from conversation.vocabulary import SignalKind, SignalMeasure

#: The columns of ``signals_table``, in order.
SIGNAL_COLUMNS = ("pseudonym", "condition", "seat", *(str(m) for m in SignalMeasure))


@dataclass(frozen=True, slots=True)
class SignalSummary:
    """One person's signals, summarised (``measures``: ``SignalMeasure`` -> value, None when
    there was nothing to measure)."""

    participant_id: int
    pseudonym: str
    condition: str | None
    seat: str | None
    measures: dict[str, float | int | None]

    def row(self) -> dict[str, Any]:
        return {
            "pseudonym": self.pseudonym,
            "condition": self.condition,
            "seat": self.seat,
            **{str(m): self.measures.get(m) for m in SignalMeasure},
        }


def measures_of(records: list[Any]) -> dict[str, float | int | None]:
    """The :class:`~conversation.vocabulary.SignalMeasure` values of one person's records."""
    messages = [r.data for r in records if r.kind == SignalKind.MESSAGE]
    surveys = [r.data for r in records if r.kind == SignalKind.SURVEY]
    chars = sum(int(m.get("chars") or 0) for m in messages)
    pasted = sum(int(m.get("pasted_chars") or 0) for m in messages)
    speeds = [
        int(m.get("chars") or 0) / (m["compose_ms"] / 1000)
        for m in messages
        if isinstance(m.get("compose_ms"), int) and m["compose_ms"] > 0
    ]
    replies = [m["reply_ms"] / 1000 for m in messages if isinstance(m.get("reply_ms"), int)]
    return {
        SignalMeasure.MESSAGES: len(messages),
        SignalMeasure.PASTED_SHARE: round(min(1.0, pasted / chars), 4) if chars else None,
        SignalMeasure.FOCUS_LOST_SHARE: (
            round(sum(1 for m in messages if m.get("focus_lost")) / len(messages), 4)
            if messages
            else None
        ),
        SignalMeasure.CHARS_PER_SECOND: round(statistics.median(speeds), 3) if speeds else None,
        SignalMeasure.REPLY_SECONDS: round(statistics.median(replies), 3) if replies else None,
        SignalMeasure.SURVEY_PASTES: sum(len(s.get("pasted") or {}) for s in surveys),
        SignalMeasure.HONEYPOT: int(any(r.kind == SignalKind.HONEYPOT for r in records)),
    }


def signal_summaries(db: storage.Database, code: str) -> list[SignalSummary]:
    """Every present person's signals summarised, in the order they joined (two reads)."""
    study = get_study(db, code)
    with translated():
        people = present(storage.list_participants(db, study.id))
        records = storage.participant_signals(db, study.id)
    by_person: dict[int, list[Any]] = {}
    for record in records:
        by_person.setdefault(int(record.participant_id), []).append(record)
    return [
        SignalSummary(
            int(p.id),
            p.pseudonym,
            p.condition,
            p.seat,
            measures_of(by_person.get(int(p.id), [])),
        )
        for p in people
    ]


def signals_table(db: storage.Database, code: str) -> list[dict[str, Any]]:
    """The ``signals`` export (:data:`SIGNAL_COLUMNS`): one row per present person."""
    return [s.row() for s in signal_summaries(db, code)]


@dataclass(frozen=True, slots=True)
class ExclusionReport:
    """The study's exclusion rules applied: who each rule excludes (pseudonyms), who any rule
    excludes, and by condition how many people there were and how many are excluded."""

    by_rule: dict[str, list[str]]
    excluded: list[str]
    by_condition: dict[str, dict[str, int]] = field(default_factory=dict)


def exclusions(db: storage.Database, code: str) -> ExclusionReport:
    """The definition's ``analysis.exclusions`` applied to the people's signals (a filter for
    the analysis; nobody's path changes)."""
    study = get_study(db, code)
    rules = study_definition(db, study).model.analysis.exclusions
    summaries = signal_summaries(db, code)
    by_rule = {
        rule.name: [s.pseudonym for s in summaries if rule.excludes(s.measures)] for rule in rules
    }
    excluded = sorted({p for names in by_rule.values() for p in names})
    by_condition: dict[str, dict[str, int]] = {}
    for s in summaries:
        counts = by_condition.setdefault(s.condition or "", {"people": 0, "excluded": 0})
        counts["people"] += 1
        counts["excluded"] += s.pseudonym in excluded
    return ExclusionReport(by_rule=by_rule, excluded=excluded, by_condition=by_condition)


__all__ = [
    "SIGNAL_COLUMNS",
    "ExclusionReport",
    "SignalSummary",
    "exclusions",
    "measures_of",
    "signal_summaries",
    "signals_table",
]
