"""An analysis plan (``plan.PlanIn``) computed over a package's rooms and people, the same way
at packaging and at replication: the judges' answers to the plan's questions about every
room's transcript, the statistics by condition with and without the exclusions, the counts
the exclusions leave, and the judges' agreement (Krippendorff's alpha, bootstrap interval).

Everything comes back as plain JSON (floats rounded to 10 significant digits, NaN as null), so
two computations compare as two documents. The judges are asked through a caller's EDSL cache:
at packaging, a fresh one (their calls are stored in the package); at replication, the
package's only (``caches.PackageCache``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conversation.replication.plan import PlanIn, StatisticIn
from conversation.vocabulary import TURN_KINDS, EventKind, SignalMeasure, TurnState


@dataclass(frozen=True, slots=True)
class Unit:
    """A room or a person of the analysis: its name, condition, values (``answer.<q>``,
    ``pre.<q>``, ``post.<q>``, signal measures) and the people in it (a room's)."""

    name: str
    condition: str
    values: Mapping[str, Any]
    people: tuple[str, ...] = ()


def transcript_of(export: Mapping[str, Any]) -> str:
    """A room's transcript as a follow-up question reads it (JSON lines; its messages only)."""
    from conversation.text.transcript import render_transcript, transcript_record

    names = [a.get("name") for a in (export.get("config") or {}).get("roster") or []]
    records = []
    for event in export["events"]:
        kind = event.get("kind")
        if kind not in (EventKind.HUMAN, *TURN_KINDS) or kind == EventKind.PASS:
            continue
        if kind != EventKind.HUMAN and event.get("state") != TurnState.DONE:
            continue
        if not event.get("content"):
            continue
        speaker = event["speaker"]
        index = names.index(speaker) if speaker in names else None
        records.append(transcript_record(event["seq"], speaker, index, event["content"]))
    return render_transcript(records)


def ask_judges(
    plan: PlanIn, transcripts: Sequence[str], cache_for: Any
) -> list[list[dict[str, Any]]]:
    """Every judge's answers (a list per judge, a dict of answers per transcript). ``cache_for``
    gives the EDSL cache a judge's calls go through."""
    from conversation.analysis.questions import analyze, question_from_spec

    if not plan.questions or not transcripts:
        return []
    judges = plan.judges or [None]
    scenarios = [{"transcript": t} for t in transcripts]
    answers = []
    for judge in judges:
        questions = [question_from_spec(q) for q in plan.questions]
        result = analyze(questions, scenarios, model=judge, cache=cache_for(judge))
        by_row: list[dict[str, Any]] = [{} for _ in transcripts]
        for row in result.rows:
            index = int(row["scenario_index"])
            by_row[index] = {q["name"]: _plain(row.get(q["name"])) for q in plan.questions}
        answers.append(by_row)
    return answers


def compute(
    plan: PlanIn,
    rooms: Sequence[Unit],
    people: Sequence[Unit],
    judges: Sequence[Sequence[Mapping[str, Any]]],
) -> dict[str, Any]:
    """The plan's results (see the module doc). ``judges[j][i]``: judge ``j``'s answers about
    ``rooms[i]``; the first judge's are the rooms' ``answer.<question>`` values."""
    rooms = [
        Unit(
            r.name,
            r.condition,
            {**r.values, **{f"answer.{k}": v for k, v in (judges[0][i] if judges else {}).items()}},
            r.people,
        )
        for i, r in enumerate(rooms)
    ]
    by_rule = {
        rule.name: sorted(p.name for p in people if rule.excludes(dict(p.values)))
        for rule in plan.exclusions
    }
    excluded = sorted({name for names in by_rule.values() for name in names})
    dropped_rooms = sorted(r.name for r in rooms if set(r.people) & set(excluded))
    conditions = sorted({u.condition for u in [*rooms, *people]})
    counts = {
        c: {
            "rooms": sum(r.condition == c for r in rooms),
            "rooms_excluded": sum(r.condition == c and r.name in dropped_rooms for r in rooms),
            "people": sum(p.condition == c for p in people),
            "people_excluded": sum(p.condition == c and p.name in excluded for p in people),
        }
        for c in conditions
    }
    statistics = []
    for statistic in plan.statistics:
        per_room = statistic.measure.split(".", 1)[0] == "answer"
        units = rooms if per_room else people
        gone = set(dropped_rooms if per_room else excluded)
        statistics.append(
            {
                "name": statistic.name,
                "measure": statistic.measure,
                "statistic": statistic.statistic,
                "unit": "room" if per_room else "person",
                "all": _by_condition(statistic, units, conditions),
                "with_exclusions": _by_condition(
                    statistic, [u for u in units if u.name not in gone], conditions
                ),
            }
        )
    return _plain(
        {
            "exclusions": {"by_rule": by_rule, "excluded": excluded, "rooms": dropped_rooms},
            "counts": counts,
            "statistics": statistics,
            "answers": {r.name: [judge[i] for judge in judges] for i, r in enumerate(rooms)},
            "agreement": _agreement(plan, judges),
        }
    )


def _success(statistic: StatisticIn, value: Any) -> float | None:
    from conversation.analysis.statistics import yes_no

    if value is None:
        return None
    if statistic.value is None:
        return yes_no(value)
    return 1.0 if value == statistic.value else 0.0


def _by_condition(
    statistic: StatisticIn, units: Sequence[Unit], conditions: Sequence[str]
) -> dict[str, dict[str, Any]]:
    from conversation.analysis.statistics import mean_t, wilson

    found: dict[str, dict[str, Any]] = {}
    for condition in conditions:
        values = [u.values.get(statistic.measure) for u in units if u.condition == condition]
        if statistic.statistic == "rate":
            coded = [s for s in (_success(statistic, v) for v in values) if s is not None]
            estimate = wilson(int(sum(coded)), len(coded))
        else:
            numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            estimate = mean_t(numbers)
        found[condition] = {
            "n": estimate.n,
            "estimate": estimate.estimate,
            "low": estimate.low,
            "high": estimate.high,
            "method": estimate.method,
        }
    return found


def _agreement(plan: PlanIn, judges: Sequence[Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Each question's alpha between the judges (two or more), with its interval."""
    if len(judges) < 2:
        return {}
    from conversation.analysis.agreement import alpha_interval

    found: dict[str, Any] = {}
    for question in plan.questions:
        name = question["name"]
        if question["type"] == "free_text":
            continue
        data = {f"judge {j + 1}": [row.get(name) for row in rows] for j, rows in enumerate(judges)}
        level: Any = "interval" if question["type"] == "numerical" else "nominal"
        try:
            result = alpha_interval(data, level, n_boot=plan.bootstrap, seed=plan.seed)
        except ValueError as exc:  # too few ratings to say anything: said so
            found[name] = {"estimate": None, "reason": str(exc)}
            continue
        found[name] = {
            "estimate": result.estimate,
            "low": result.low,
            "high": result.high,
            "n_units": result.n_units,
            "reason": result.reason,
        }
    return found


def _plain(value: Any) -> Any:
    """JSON with floats rounded to 10 significant digits and NaN as null."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else float(f"{value:.10g}")
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):  # a numpy scalar
        return _plain(value.item())
    return str(value)


def signal_values(measures: Mapping[str, Any]) -> dict[str, Any]:
    """A person's signal measures as analysis values (keyed by the measure's name)."""
    return {str(m): measures.get(m) for m in SignalMeasure}


__all__ = ["Unit", "ask_judges", "compute", "signal_values", "transcript_of"]
