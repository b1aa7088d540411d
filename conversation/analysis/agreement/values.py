"""Ratings as researchers write them, and what an agreement statistic reports.

Labels or numbers, a missing rating ``None`` or NaN; ordered labels with an explicit ``order``.
Bad input raises ``ConversationValueError`` naming the field. :class:`Undefined` is a NaN that
carries why a statistic has no meaning for the data; :class:`Agreement` is an estimate with its
bootstrap interval.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Literal

import numpy as np
import pandas as pd

from conversation.exceptions import ConversationValueError

Level = Literal["nominal", "ordinal", "interval", "ratio"]
Weights = Literal["linear", "quadratic"] | None

LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
WEIGHTS: tuple[str | None, ...] = (None, "linear", "quadratic")
CONFIDENCE = 0.95
METHOD = "percentile bootstrap over units"
TABLE_COLUMNS = [
    "rater_a",
    "rater_b",
    "statistic",
    "estimate",
    "low",
    "high",
    "n_units",
    "n_boot",
    "n_undefined",
    "reason",
]


class Undefined(float):
    """A NaN that says why the statistic is undefined for these data (``.reason``). It is a
    float: ``math.isnan`` is true, and tables and charts treat it as any missing value."""

    __slots__ = ("reason",)
    reason: str

    def __new__(cls, reason: str) -> Undefined:
        value = super().__new__(cls, "nan")
        value.reason = reason
        return value

    def __repr__(self) -> str:
        return f"Undefined({self.reason!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Undefined, (self.reason,))


def reason_of(value: float) -> str | None:
    """Why ``value`` is undefined (an :class:`Undefined`'s reason, or a generic one for a plain
    NaN); ``None`` for a number."""
    if isinstance(value, Undefined):
        return value.reason
    return "undefined (NaN)" if math.isnan(value) else None


@dataclass(frozen=True, slots=True)
class Agreement:
    """An agreement statistic with its bootstrap interval.

    ``n_units``: the units behind the estimate (for alpha, units with at least two ratings; for
    kappa, units rated by both). ``n_undefined`` of the ``n_boot`` bootstrap samples had no
    defined value and were left out of the interval. ``reason`` says why the estimate (or the
    interval) is missing, when it is."""

    statistic: str
    estimate: float
    low: float
    high: float
    n_units: int
    n_boot: int
    n_undefined: int
    confidence: float = CONFIDENCE
    method: str = METHOD
    reason: str | None = None
    raters: tuple[Hashable, ...] = ()

    def describe(self) -> str:
        """One plain line, e.g. ``alpha (ordinal) = 0.815 (95% CI 0.70 to 0.93; n = 11 units;
        percentile bootstrap over units, 2000 samples)``."""
        if math.isnan(self.estimate):
            return f"{self.statistic}: undefined ({self.reason}; n = {self.n_units} units)"
        ci = (
            f"no interval: {self.reason}"
            if math.isnan(self.low)
            else f"{self.confidence:.0%} CI {self.low:.3f} to {self.high:.3f}"
        )
        undefined = f", {self.n_undefined} undefined" if self.n_undefined else ""
        return (
            f"{self.statistic} = {self.estimate:.3f} ({ci}; n = {self.n_units} units; "
            f"{self.method}, {self.n_boot} samples{undefined})"
        )


# --- values -------------------------------------------------------------------------------------


def missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float | np.floating) and math.isnan(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, Real | np.number) and not isinstance(value, bool | np.bool_)


@dataclass(frozen=True, slots=True)
class Scale:
    """Ratings coded for the libraries: ``values`` (float, NaN = missing) in the domain of
    ``domain``; ``index`` the position of each value in ``domain`` (-1 = missing)."""

    values: np.ndarray
    index: np.ndarray
    domain: np.ndarray
    labels: list[Any]
    numeric: bool


def check_level(level: Any) -> Level:
    if level not in LEVELS:
        raise ConversationValueError(
            f"level={level!r} is not a level of measurement; use one of {', '.join(LEVELS)}"
        )
    return level  # type: ignore[no-any-return]


def check_weights(weights: Any) -> Weights:
    if weights not in WEIGHTS:
        raise ConversationValueError(
            f"weights={weights!r} is not a kappa weighting; use None (unweighted), 'linear' or "
            "'quadratic'"
        )
    return weights  # type: ignore[no-any-return]


def encode(values: Sequence[Any], level: str, order: Sequence[Any] | None, what: str) -> Scale:
    """Code raw ratings (labels or numbers, None/NaN missing) on the scale ``level`` asks for."""
    present = [v for v in values if not missing(v)]
    for value in present:
        if not isinstance(value, Hashable):
            raise ConversationValueError(
                f"{what} holds {value!r}, which is not a rating: use a label or a number"
            )
    if order is not None:
        return _ordered_labels(values, present, level, order, what)
    if bool(present) and all(_is_number(v) for v in present):
        return _numbers(values, level, what)
    if level != "nominal" and present:
        example = next(v for v in present if not _is_number(v))
        if level == "ordinal":
            raise ConversationValueError(
                f"level='ordinal' with labels ({what} holds {example!r}) needs their order: "
                "pass order=[...], lowest first"
            )
        raise ConversationValueError(
            f"level={level!r} needs numbers, but {what} holds the label {example!r}; use "
            "level='nominal' (or 'ordinal' with order=[...]) for labels, or convert them"
        )
    return _labels(values, list(dict.fromkeys(present)))


def _labels(values: Sequence[Any], labels: list[Any]) -> Scale:
    """Labels coded by their position in ``labels`` (missing: NaN, index -1)."""
    position = {label: i for i, label in enumerate(labels)}
    index = np.array([-1 if missing(v) else position[v] for v in values], dtype=np.int64)
    coded = np.where(index < 0, np.nan, index.astype(float))
    return Scale(coded, index, np.arange(len(labels), dtype=float), labels, False)


def _ordered_labels(
    values: Sequence[Any], present: list[Any], level: str, order: Sequence[Any], what: str
) -> Scale:
    """Labels on the scale ``order`` gives (lowest first)."""
    if level in ("interval", "ratio"):
        raise ConversationValueError(
            f"order= is for labels on a nominal or ordinal scale; level={level!r} takes "
            "numbers (their distances are the numbers' own)"
        )
    if isinstance(order, str | bytes) or not isinstance(order, Iterable):
        raise ConversationValueError(f"order={order!r} must be a list of the labels, lowest first")
    labels = list(order)
    if len(set(labels)) != len(labels):
        raise ConversationValueError(f"order={labels!r} names a label twice")
    known = set(labels)
    strangers = sorted({repr(v) for v in present if v not in known})
    if strangers:
        raise ConversationValueError(
            f"{what} holds {', '.join(strangers)}, not in order={labels!r}; add them to "
            "order or correct the ratings"
        )
    return _labels(values, labels)


def _numbers(values: Sequence[Any], level: str, what: str) -> Scale:
    """Numbers on their own scale (the domain is the distinct values, sorted)."""
    floats = np.array([np.nan if missing(v) else float(v) for v in values], dtype=float)
    finite = floats[~np.isnan(floats)]
    if not np.isfinite(finite).all():
        raise ConversationValueError(f"{what} holds an infinite value; ratings must be finite")
    if level == "ratio" and (finite < 0).any():
        raise ConversationValueError(
            f"level='ratio' needs values of 0 or more; {what} holds {finite.min():g} "
            "(use level='interval' for a scale without a true zero)"
        )
    domain = np.unique(finite)
    index = np.full(len(floats), -1, dtype=np.int64)
    known = ~np.isnan(floats)
    index[known] = np.searchsorted(domain, floats[known])
    return Scale(floats, index, domain, domain.tolist(), True)


def rater_rows(data: Any) -> tuple[list[Hashable], list[list[Any]]]:
    """A raters x units table as (rater names, rows). Accepts a DataFrame (index = raters), a
    mapping rater -> ratings, a 2-D array or a list of rows."""
    if isinstance(data, pd.DataFrame):
        return list(data.index), [list(row) for row in data.itertuples(index=False)]
    if isinstance(data, Mapping):
        names, rows = list(data.keys()), list(data.values())
    elif isinstance(data, np.ndarray):
        if data.ndim != 2:
            raise ConversationValueError(
                f"data must be a raters x units table (2 dimensions), not {data.ndim}"
            )
        names, rows = list(range(data.shape[0])), list(data)
    elif isinstance(data, Iterable) and not isinstance(data, str | bytes):
        rows = list(data)
        names = list(range(len(rows)))
    else:
        raise ConversationValueError(
            f"data must be a raters x units table (one row of ratings per rater), not {data!r}"
        )
    table = []
    for name, row in zip(names, rows, strict=True):
        if isinstance(row, str | bytes) or not isinstance(row, Iterable):
            raise ConversationValueError(
                f"data: the row of rater {name!r} must be a list of ratings (one per unit), "
                f"not {row!r}"
            )
        table.append(list(row))
    lengths = {len(row) for row in table}
    if len(lengths) > 1:
        sizes = ", ".join(f"{n!r}: {len(r)}" for n, r in zip(names, table, strict=True))
        raise ConversationValueError(
            f"data: every rater needs one entry per unit (None where not rated); row lengths "
            f"differ ({sizes})"
        )
    return names, table


def check_shape(n_raters: int, n_units: int, what: str = "data") -> None:
    if n_raters < 2:
        raise ConversationValueError(
            f"{what} has {n_raters} rater; agreement needs at least 2 raters"
        )
    if n_units < 2:
        raise ConversationValueError(f"{what} has {n_units} unit; agreement needs at least 2 units")


__all__ = [
    "LEVELS",
    "WEIGHTS",
    "Agreement",
    "Undefined",
    "reason_of",
]
