"""Judge scores as tables (pandas): the scores export, scores by condition with intervals and n,
agreement between coders, judges and the panel, a judge's confusion matrix against the coders,
and the units they disagree on. Not re-exported by ``conversation.analysis`` (pandas: the
worker never loads it); import ``conversation.analysis.judges.tables``.

    frame = scores_frame(db, rubric_id)                   # unit, rater, dimension, value, ...
    table = agreement(db, rubric_id, "code", n_boot=500)  # an agreement.AgreementTable
    confusion(rows, "judge-a", ["human:ann", "human:bob"])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

import storage
from conversation.analysis.agreement import AgreementTable, agreement_table
from conversation.analysis.judges.panel import PANEL, Score, load_rubric, scores
from conversation.analysis.judges.raters import human_ratings, ratings

#: The scores export: one row per rater, unit and dimension.
SCORE_COLUMNS = [
    "unit", "room_id", "seq", "condition", "rater", "dimension", "value", "rubric_version",
    "reason", "error",
]  # fmt: skip


def _conditions(db: Any, room_ids: Sequence[int]) -> dict[int, str | None]:
    return {rid: storage.get_room(db, rid).condition for rid in sorted(set(room_ids))}


def _frame(db: Any, rows: Sequence[Score]) -> pd.DataFrame:
    conditions = _conditions(db, [s.room_id for s in rows])
    data = [
        (
            s.unit, s.room_id, s.seq, conditions.get(s.room_id), s.rater, s.dimension, s.value,
            s.rubric_version, s.reason, None if s.error is None else s.error.get("message"),
        )
        for s in rows
    ]  # fmt: skip
    return pd.DataFrame(data, columns=SCORE_COLUMNS).astype({"value": object})


def scores_frame(
    db: Any,
    rubric_id: int,
    *,
    room_ids: Sequence[int] | None = None,
    humans: bool = True,
    combine: str | None = None,
) -> pd.DataFrame:
    """Every score of a stored rubric version, one row per unit, rater and dimension
    (:data:`SCORE_COLUMNS`): each judge's (failures with their error), the panel's and (with
    ``humans``) each coder's."""
    stored = load_rubric(db, rubric_id)
    rows = scores(db, rubric_id, room_ids=room_ids, combine=combine)
    if humans and stored.rubric.unit == "message":
        rooms = list(room_ids) if room_ids is not None else sorted({s.room_id for s in rows})
        for dimension in stored.rubric.dimensions:
            rows += human_ratings(db, stored.rubric, rooms, dimension.name).ratings
    frame = _frame(db, rows)
    frame["rubric_version"] = frame["rubric_version"].fillna(stored.rubric.version)
    return frame


def agreement(
    db: Any,
    rubric_id: int,
    dimension: str,
    *,
    room_ids: Sequence[int] | None = None,
    statistic: str = "alpha",
    weights: str | None = None,
    n_boot: int = 500,
    seed: int = 0,
    combine: str | None = None,
) -> AgreementTable:
    """Agreement on ``dimension`` between every two raters (coders, each judge, the panel),
    at the dimension's level of measurement, with bootstrap intervals and n."""
    stored = load_rubric(db, rubric_id)
    wanted = stored.rubric.dimension(dimension)
    rows = ratings(db, rubric_id, dimension, room_ids=room_ids, combine=combine)
    return agreement_table(
        [(s.unit, s.rater, s.value) for s in rows],
        wanted.level,  # type: ignore[arg-type]
        order=wanted.order(),
        statistic=statistic,  # type: ignore[arg-type]
        weights=weights,  # type: ignore[arg-type]
        n_boot=n_boot,
        seed=seed,
    )


def _values(rows: Sequence[Score], rater: str) -> dict[str, Any]:
    return {s.unit: s.value for s in rows if s.rater == rater and s.value is not None}


def confusion(rows: Sequence[Score], rater: str, against: Sequence[str]) -> pd.DataFrame:
    """How ``rater``'s values (rows) meet those of ``against`` (columns) on the units both
    rated: each (unit, other rater) pair counts once."""
    mine = _values(rows, rater)
    pairs = [
        (mine[s.unit], s.value)
        for s in rows
        if s.rater in against and s.rater != rater and s.unit in mine and s.value is not None
    ]
    if not pairs:
        return pd.DataFrame()
    frame = pd.DataFrame(pairs, columns=[rater, "others"]).astype(str)
    table = pd.crosstab(frame[rater], frame["others"])
    table.index.name, table.columns.name = f"{rater} (rows)", "others (columns)"
    return table


def disagreements(rows: Sequence[Score], rater: str, against: Sequence[str]) -> pd.DataFrame:
    """The units where ``rater`` gave another value than one of ``against``: unit, room_id,
    seq, event_id, the rater's value, the others' values and the rater's reason."""
    mine = {s.unit: s for s in rows if s.rater == rater and s.value is not None}
    others: dict[str, list[str]] = {}
    for s in rows:
        if s.rater in against and s.rater != rater and s.unit in mine and s.value is not None:
            others.setdefault(s.unit, []).append(f"{s.rater}={s.value}")
    data = []
    for unit, found in others.items():
        own = mine[unit]
        if any(str(own.value) != item.split("=", 1)[1] for item in found):
            data.append((unit, own.room_id, own.seq, own.event_id, own.value, "; ".join(found), own.reason))  # fmt: skip
    columns = ["unit", "room_id", "seq", "event_id", rater, "others", "reason"]
    return pd.DataFrame(data, columns=columns).astype({rater: object})


def by_condition(
    frame: pd.DataFrame,
    dimension: str,
    level: str,
    *,
    rater: str = PANEL,
    bounds: tuple[float | None, float | None] | None = None,
    order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One rater's scores of ``dimension`` per condition (in ``order``, the design's, when
    given; else sorted): numbers (ordinal 1..k, interval, ratio) as the mean with its 95% t
    interval, within ``bounds`` (the scale's: ``Dimension.bounds``); labels as each label's
    share with its 95% Wilson interval. Columns: condition, (label), n, estimate, low, high."""
    from conversation.analysis import statistics

    part = frame[(frame["rater"] == rater) & (frame["dimension"] == dimension)]
    part = part[part["value"].notna()].assign(condition=part["condition"].fillna("(none)"))
    numeric = level != "nominal" and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in part["value"]
    )
    present = sorted({str(c) for c in part["condition"]})
    conditions = [c for c in order or () if c in present] + [
        c for c in present if c not in (order or ())
    ]
    if numeric:
        values = part.assign(value=part["value"].astype(float))
        means = statistics.means_by_condition(values, "value", order=conditions, bounds=bounds)
        return means.rename(columns={"mean": "estimate"}).assign(label=None)[
            ["condition", "label", "n", "estimate", "low", "high"]
        ]
    rows = []
    for condition in conditions:
        group = part[part["condition"].astype(str) == condition]
        for label in sorted({str(v) for v in part["value"]}):
            hits = int((group["value"].astype(str) == label).sum())
            est = statistics.wilson(hits, len(group))
            rows.append((condition, label, len(group), est.estimate, est.low, est.high))
    return pd.DataFrame(rows, columns=["condition", "label", "n", "estimate", "low", "high"])


def export_scores_csv(
    db: Any, rubric_id: int, *, room_ids: Sequence[int] | None = None, humans: bool = True
) -> str:
    """The scores table as CSV (:data:`SCORE_COLUMNS`: unit, room, seq, condition, rater,
    dimension, value, rubric version, reason, error), for other tools."""
    return scores_frame(db, rubric_id, room_ids=room_ids, humans=humans).to_csv(index=False)


def export_agreement_csv(db: Any, rubric_id: int, dimension: str, **options: Any) -> str:
    """The pairwise agreement table of ``dimension`` as CSV (``agreement.TABLE_COLUMNS``: rater_a,
    rater_b, statistic, estimate, low, high, n_units, n_boot, n_undefined, reason) and a last
    row for all raters together (rater_a ``all``); ``options`` as :func:`agreement`."""
    table = agreement(db, rubric_id, dimension, **options)
    frame = table.frame()
    if table.overall is not None:
        o = table.overall
        frame.loc[len(frame)] = ["all", "", o.statistic, o.estimate, o.low, o.high, o.n_units,
                                 o.n_boot, o.n_undefined, o.reason]  # fmt: skip
    return frame.to_csv(index=False)


__all__ = [
    "SCORE_COLUMNS",
    "agreement",
    "by_condition",
    "confusion",
    "disagreements",
    "export_agreement_csv",
    "export_scores_csv",
    "scores_frame",
]
