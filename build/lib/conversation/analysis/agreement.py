"""Agreement between raters (human coders, model judges, a panel): Cohen's kappa for two raters,
Krippendorff's alpha for any number with missing values, each with a bootstrap interval, and the
raters x raters table of both.

The statistics are the libraries' own: ``sklearn.metrics.cohen_kappa_score`` and
``krippendorff.alpha`` (imported on first use; scikit-learn takes about a second). What this
module adds is what a study needs around them:

- **Values as researchers write them.** Labels (``"concession"``) or numbers; a missing rating is
  ``None`` or NaN. Ordered labels take an explicit ``order=[...]`` (lowest first); interval and
  ratio levels need numbers. Bad input raises ``ConversationValueError`` naming the field.
- **Undefined is a value, not a crash.** When a statistic has no meaning for the data (no
  variation: everyone gave the same label; no unit rated by two raters) the result is
  :class:`Undefined`, a NaN float that carries its ``reason``.
- **Intervals.** A percentile bootstrap over units (units are resampled, each keeping all its
  ratings), seeded and so repeatable; it reports the estimate, the interval, ``n_units`` and how
  many bootstrap samples were undefined (a resample can lose all variation).

    krippendorff_alpha([[1, 2, 3, None], [1, 2, 2, 4]], level="ordinal")
    cohen_kappa(["yes", "no", "yes"], ["yes", "no", "no"])
    alpha_interval(table, level="interval", n_boot=2000, seed=1)
    agreement_table(long_frame, level="ordinal", order=["low", "mid", "high"])
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float | np.floating) and math.isnan(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, Real | np.number) and not isinstance(value, bool | np.bool_)


@dataclass(frozen=True, slots=True)
class _Scale:
    """Ratings coded for the libraries: ``values`` (float, NaN = missing) in the domain of
    ``domain``; ``index`` the position of each value in ``domain`` (-1 = missing)."""

    values: np.ndarray
    index: np.ndarray
    domain: np.ndarray
    labels: list[Any]
    numeric: bool


def _check_level(level: Any) -> Level:
    if level not in LEVELS:
        raise ConversationValueError(
            f"level={level!r} is not a level of measurement; use one of {', '.join(LEVELS)}"
        )
    return level  # type: ignore[no-any-return]


def _check_weights(weights: Any) -> Weights:
    if weights not in WEIGHTS:
        raise ConversationValueError(
            f"weights={weights!r} is not a kappa weighting; use None (unweighted), 'linear' or "
            "'quadratic'"
        )
    return weights  # type: ignore[no-any-return]


def _encode(values: Sequence[Any], level: str, order: Sequence[Any] | None, what: str) -> _Scale:
    """Code raw ratings (labels or numbers, None/NaN missing) on the scale ``level`` asks for."""
    present = [v for v in values if not _missing(v)]
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


def _labels(values: Sequence[Any], labels: list[Any]) -> _Scale:
    """Labels coded by their position in ``labels`` (missing: NaN, index -1)."""
    position = {label: i for i, label in enumerate(labels)}
    index = np.array([-1 if _missing(v) else position[v] for v in values], dtype=np.int64)
    coded = np.where(index < 0, np.nan, index.astype(float))
    return _Scale(coded, index, np.arange(len(labels), dtype=float), labels, False)


def _ordered_labels(
    values: Sequence[Any], present: list[Any], level: str, order: Sequence[Any], what: str
) -> _Scale:
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


def _numbers(values: Sequence[Any], level: str, what: str) -> _Scale:
    """Numbers on their own scale (the domain is the distinct values, sorted)."""
    floats = np.array([np.nan if _missing(v) else float(v) for v in values], dtype=float)
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
    return _Scale(floats, index, domain, domain.tolist(), True)


def _rows(data: Any) -> tuple[list[Hashable], list[list[Any]]]:
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


def _check_shape(n_raters: int, n_units: int, what: str = "data") -> None:
    if n_raters < 2:
        raise ConversationValueError(
            f"{what} has {n_raters} rater; agreement needs at least 2 raters"
        )
    if n_units < 2:
        raise ConversationValueError(f"{what} has {n_units} unit; agreement needs at least 2 units")


# --- Krippendorff's alpha -----------------------------------------------------------------------


def _value_counts(index: np.ndarray, n_values: int) -> np.ndarray:
    """units x values: how many raters gave each value to each unit (``index``: raters x units,
    -1 missing)."""
    counts = np.zeros((index.shape[1], n_values), dtype=np.int64)
    for row in index:
        known = row >= 0
        np.add.at(counts, (np.nonzero(known)[0], row[known]), 1)
    return counts


def _alpha_of_counts(counts: np.ndarray, scale: _Scale, level: Level) -> float:
    import krippendorff

    pairable = counts[counts.sum(axis=1) >= 2]
    if len(pairable) == 0:
        return Undefined("no unit was rated by two raters")
    used = np.nonzero(pairable.sum(axis=0))[0]
    if len(used) < 2:
        return Undefined(f"no variation: every rating is {scale.labels[used[0]]!r}")
    value = krippendorff.alpha(
        value_counts=pairable, value_domain=scale.domain, level_of_measurement=level
    )
    return float(value)


def krippendorff_alpha(
    data: Any, level: Level = "nominal", *, order: Sequence[Any] | None = None
) -> float:
    """Krippendorff's alpha of a raters x units table (``krippendorff.alpha``).

    ``data``: one row per rater, one column per unit (a list of rows, a 2-D array, a mapping
    rater -> ratings, or a DataFrame with raters as its index); ``None``/NaN where a rater did
    not rate a unit. ``level``: ``nominal`` (labels or numbers), ``ordinal`` (numbers, or labels
    with ``order=[...]`` lowest first), ``interval`` or ``ratio`` (numbers). Units rated by fewer
    than two raters carry no information and are left out. Returns :class:`Undefined` (a NaN
    with a reason) when no unit has two ratings or every rating is the same."""
    level = _check_level(level)
    names, rows = _rows(data)
    _check_shape(len(rows), len(rows[0]) if rows else 0)
    flat = [v for row in rows for v in row]
    scale = _encode(flat, level, order, "data")
    index = scale.index.reshape(len(rows), -1)
    return _alpha_of_counts(_value_counts(index, len(scale.domain)), scale, level)


# --- Cohen's kappa ------------------------------------------------------------------------------


def _kappa_categories(
    scale: _Scale, weights: Weights, ordered: bool
) -> tuple[np.ndarray, int, list[Any]]:
    """Category positions for scikit-learn (weights count the steps between positions), how
    many categories there are, and their labels."""
    if weights is None or ordered or len(scale.domain) == 0:
        return scale.index, len(scale.domain), scale.labels
    if not scale.numeric:
        example = next(iter(scale.labels), None)
        raise ConversationValueError(
            f"weights={weights!r} needs ordered categories, but the ratings are labels "
            f"({example!r}): pass order=[...], lowest first, or use weights=None"
        )
    # Weighted kappa on numbers: the categories are every whole number from the lowest to the
    # highest, so an unused middle value still counts as a step (1 vs 3 is two steps apart).
    domain = scale.domain
    if not np.all(domain == np.round(domain)):
        raise ConversationValueError(
            f"weights={weights!r} on numbers that are not whole ({domain.tolist()}): pass "
            "order=[...] with every category, lowest first, so the steps between them are known"
        )
    low, high = int(domain.min()), int(domain.max())
    index = np.where(scale.index < 0, -1, np.nan_to_num(scale.values).astype(np.int64) - low)
    return index, high - low + 1, list(range(low, high + 1))


def _kappa_of(a: np.ndarray, b: np.ndarray, k: int, weights: Weights, labels: list[Any]) -> float:
    """Kappa of category positions already paired (no missing)."""
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import cohen_kappa_score

    if len(a) == 0:
        return Undefined("no unit was rated by both raters")
    used = np.union1d(a, b)
    if len(used) == 1:
        return Undefined(f"no variation: both raters gave every unit {labels[used[0]]!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        value = cohen_kappa_score(a, b, labels=np.arange(k), weights=weights)
    return float(value) if not math.isnan(value) else Undefined("kappa is undefined here")


def _kappa_inputs(
    a: Sequence[Any], b: Sequence[Any], weights: Weights, order: Sequence[Any] | None
) -> tuple[np.ndarray, int, list[Any]]:
    """Position pairs (2 x rated-by-both) for a and b, the number of categories and labels."""
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ConversationValueError(
            f"a and b must rate the same units (one entry each, None where not rated); "
            f"a has {len(a)}, b has {len(b)}"
        )
    _check_shape(2, len(a), "a and b")
    scale = _encode(a + b, "nominal", order, "a and b")
    index, k, labels = _kappa_categories(scale, weights, order is not None)
    pairs = index.reshape(2, -1)
    both = (pairs >= 0).all(axis=0)
    return pairs[:, both], k, labels


def cohen_kappa(
    a: Sequence[Any],
    b: Sequence[Any],
    weights: Weights = None,
    *,
    order: Sequence[Any] | None = None,
) -> float:
    """Cohen's kappa between two raters' ratings of the same units
    (``sklearn.metrics.cohen_kappa_score``).

    ``a[i]`` and ``b[i]`` rate unit ``i``; a unit either left unrated (None/NaN) is left out.
    ``weights``: ``None`` (every disagreement counts fully), ``"linear"`` or ``"quadratic"``
    (by the number of steps between ordered categories: numbers, whole numbers from lowest to
    highest being the steps, or labels with ``order=[...]``). Returns :class:`Undefined` when no
    unit has both ratings or both raters gave one and the same category throughout."""
    weights = _check_weights(weights)
    pairs, k, labels = _kappa_inputs(a, b, weights, order)
    return _kappa_of(pairs[0], pairs[1], k, weights, labels)


# --- intervals ----------------------------------------------------------------------------------


def _check_boot(n_boot: Any, confidence: Any) -> None:
    if not isinstance(n_boot, int) or isinstance(n_boot, bool) or n_boot < 1:
        raise ConversationValueError(f"n_boot={n_boot!r} must be a whole number of 1 or more")
    if not isinstance(confidence, Real) or not 0 < float(confidence) < 1:
        raise ConversationValueError(
            f"confidence={confidence!r} must be between 0 and 1 (0.95 for a 95% interval)"
        )


def _bootstrap(
    statistic: Callable[[np.ndarray], float],
    n_units: int,
    *,
    name: str,
    n_boot: int,
    seed: int,
    confidence: float,
    raters: tuple[Hashable, ...] = (),
) -> Agreement:
    """``statistic(indices)`` on all units, then on ``n_boot`` resamples of units (with
    replacement, from ``numpy.random.default_rng(seed)``): the estimate with a percentile
    interval over the resamples where it is defined."""
    _check_boot(n_boot, confidence)
    estimate = statistic(np.arange(n_units))
    if math.isnan(estimate):
        return Agreement(
            name, estimate, math.nan, math.nan, n_units, 0, 0, confidence,
            reason=reason_of(estimate), raters=raters,
        )  # fmt: skip
    rng = np.random.default_rng(seed)
    samples = np.array([statistic(rng.integers(0, n_units, n_units)) for _ in range(n_boot)])
    defined = samples[~np.isnan(samples)]
    undefined = n_boot - len(defined)
    if len(defined) == 0:
        return Agreement(
            name, estimate, math.nan, math.nan, n_units, n_boot, undefined, confidence,
            reason="every bootstrap sample was undefined", raters=raters,
        )  # fmt: skip
    tail = (1 - confidence) / 2
    low, high = np.quantile(defined, [tail, 1 - tail])
    return Agreement(
        name, estimate, float(low), float(high), n_units, n_boot, undefined, confidence,
        raters=raters,
    )  # fmt: skip


def interval(
    statistic: Callable[[np.ndarray], float],
    data: Any,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    name: str | None = None,
) -> Agreement:
    """Any agreement statistic of a raters x units table with its bootstrap interval.

    ``statistic`` receives a raters x units table (a 2-D numpy object array: row ``i`` is rater
    ``i``, missing ratings as given) and returns a float, NaN where undefined; it is called once
    on ``data`` and on each of ``n_boot`` tables of units resampled with replacement. For example
    ``interval(lambda t: cohen_kappa(t[0], t[1], "linear"), [a, b], seed=1)``. Every unit is
    resampled; :func:`alpha_interval` and :func:`kappa_interval` first leave out units that
    carry no information (and are much faster)."""
    names, rows = _rows(data)
    _check_shape(len(rows), len(rows[0]) if rows else 0)
    table = np.empty((len(rows), len(rows[0])), dtype=object)
    table[:] = rows
    label = name or str(getattr(statistic, "__name__", "statistic"))
    return _bootstrap(
        lambda units: statistic(table[:, units]),
        table.shape[1],
        name=label, n_boot=n_boot, seed=seed, confidence=confidence, raters=tuple(names),
    )  # fmt: skip


def _alpha_agreement(
    index: np.ndarray,
    scale: _Scale,
    level: Level,
    *,
    raters: tuple[Hashable, ...],
    n_boot: int,
    seed: int,
    confidence: float,
) -> Agreement:
    counts = _value_counts(index, len(scale.domain))
    pairable = counts[counts.sum(axis=1) >= 2]
    name = f"alpha ({level})"
    if len(pairable) < 2:
        reason = (
            "no unit was rated by two raters"
            if len(pairable) == 0
            else "only one unit was rated by two raters; an interval needs at least 2"
        )
        _check_boot(n_boot, confidence)
        estimate = _alpha_of_counts(pairable, scale, level) if len(pairable) else Undefined(reason)
        return Agreement(
            name, estimate, math.nan, math.nan, len(pairable), 0, 0, confidence,
            reason=reason_of(estimate) or reason, raters=raters,
        )  # fmt: skip
    return _bootstrap(
        lambda units: _alpha_of_counts(pairable[units], scale, level),
        len(pairable),
        name=name, n_boot=n_boot, seed=seed, confidence=confidence, raters=raters,
    )  # fmt: skip


def alpha_interval(
    data: Any,
    level: Level = "nominal",
    *,
    order: Sequence[Any] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Agreement:
    """:func:`krippendorff_alpha` with its bootstrap interval: the units rated by at least two
    raters (``n_units``) are resampled with replacement ``n_boot`` times (seeded)."""
    level = _check_level(level)
    names, rows = _rows(data)
    _check_shape(len(rows), len(rows[0]) if rows else 0)
    scale = _encode([v for row in rows for v in row], level, order, "data")
    return _alpha_agreement(
        scale.index.reshape(len(rows), -1), scale, level, raters=tuple(names),
        n_boot=n_boot, seed=seed, confidence=confidence,
    )  # fmt: skip


def _kappa_name(weights: Weights) -> str:
    return "kappa" if weights is None else f"kappa ({weights})"


def _kappa_agreement(
    pairs: np.ndarray,
    k: int,
    labels: list[Any],
    weights: Weights,
    *,
    raters: tuple[Hashable, ...],
    n_boot: int,
    seed: int,
    confidence: float,
) -> Agreement:
    n = pairs.shape[1]
    if n < 2:
        _check_boot(n_boot, confidence)
        estimate = _kappa_of(pairs[0], pairs[1], k, weights, labels)
        reason = reason_of(estimate) or "only one unit was rated by both; an interval needs 2"
        return Agreement(
            _kappa_name(weights), estimate, math.nan, math.nan, n, 0, 0, confidence,
            reason=reason, raters=raters,
        )  # fmt: skip
    return _bootstrap(
        lambda units: _kappa_of(pairs[0, units], pairs[1, units], k, weights, labels),
        n,
        name=_kappa_name(weights), n_boot=n_boot, seed=seed, confidence=confidence,
        raters=raters,
    )  # fmt: skip


def kappa_interval(
    a: Sequence[Any],
    b: Sequence[Any],
    weights: Weights = None,
    *,
    order: Sequence[Any] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Agreement:
    """:func:`cohen_kappa` with its bootstrap interval: the units rated by both (``n_units``)
    are resampled with replacement ``n_boot`` times (seeded)."""
    weights = _check_weights(weights)
    pairs, k, labels = _kappa_inputs(a, b, weights, order)
    return _kappa_agreement(
        pairs, k, labels, weights, raters=("a", "b"),
        n_boot=n_boot, seed=seed, confidence=confidence,
    )  # fmt: skip


# --- the raters x raters table ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AgreementTable:
    """Pairwise agreement between every two raters, and alpha over all of them.

    ``pairs[(a, b)]`` for raters ``a`` before ``b`` in ``raters``; ``overall`` is Krippendorff's
    alpha of every rater at once, at the table's level."""

    raters: tuple[Hashable, ...]
    level: str
    statistic: str
    pairs: dict[tuple[Hashable, Hashable], Agreement] = field(default_factory=dict)
    overall: Agreement | None = None

    def pair(self, a: Hashable, b: Hashable) -> Agreement:
        """The agreement of ``a`` and ``b`` (either order)."""
        found = self.pairs.get((a, b)) or self.pairs.get((b, a))
        if found is None:
            raise ConversationValueError(
                f"no pair ({a!r}, {b!r}) in the table; its raters are {list(self.raters)}"
            )
        return found

    def frame(self) -> pd.DataFrame:
        """One row per pair: ``rater_a, rater_b, statistic, estimate, low, high, n_units,
        n_boot, n_undefined, reason`` (for export)."""
        rows = [
            (a, b, r.statistic, r.estimate, r.low, r.high, r.n_units, r.n_boot, r.n_undefined,
             r.reason)
            for (a, b), r in self.pairs.items()
        ]  # fmt: skip
        return pd.DataFrame(rows, columns=TABLE_COLUMNS)

    def matrix(self, value: str = "estimate") -> pd.DataFrame:
        """The raters x raters table of one field (``estimate``, ``low``, ``high``,
        ``n_units``...), symmetric, NaN on the diagonal."""
        if value not in TABLE_COLUMNS[3:9]:
            raise ConversationValueError(
                f"value={value!r}: use one of {', '.join(TABLE_COLUMNS[3:9])}"
            )
        names = list(self.raters)
        grid = pd.DataFrame(math.nan, index=names, columns=names, dtype=float)
        for (a, b), result in self.pairs.items():
            grid.loc[a, b] = grid.loc[b, a] = float(getattr(result, value))
        return grid


def _long(ratings: Any) -> pd.DataFrame:
    if isinstance(ratings, pd.DataFrame):
        missing = [c for c in ("unit", "rater", "value") if c not in ratings.columns]
        if missing:
            raise ConversationValueError(
                f"ratings needs the columns unit, rater and value; it lacks {', '.join(missing)} "
                f"(it has {list(ratings.columns)})"
            )
        return ratings[["unit", "rater", "value"]]
    rows = []
    for item in ratings:
        if isinstance(item, Mapping):
            try:
                rows.append((item["unit"], item["rater"], item["value"]))
            except KeyError as exc:
                raise ConversationValueError(
                    f"ratings: each row needs unit, rater and value; {item!r} lacks {exc}"
                ) from None
        elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 3:
            rows.append(tuple(item))
        else:
            raise ConversationValueError(
                f"ratings: each row must be (unit, rater, value) or a dict with those keys, "
                f"not {item!r}"
            )
    return pd.DataFrame(rows, columns=["unit", "rater", "value"], dtype=object)


def ratings_table(ratings: Any) -> pd.DataFrame:
    """Long ratings (``unit, rater, value`` rows: a DataFrame, dicts or tuples) as the raters x
    units table the statistics take (raters and units in order of first appearance; None where a
    rater did not rate a unit). A rater rating a unit twice is refused."""
    frame = _long(ratings)
    rated = frame[[not _missing(v) for v in frame["value"]]]
    twice = rated[rated.duplicated(["unit", "rater"], keep=False)]
    if len(twice):
        unit, rater = twice.iloc[0]["unit"], twice.iloc[0]["rater"]
        given = [v for v in twice[(twice.unit == unit) & (twice.rater == rater)]["value"]]
        raise ConversationValueError(
            f"ratings: rater {rater!r} rated unit {unit!r} more than once ({given!r}); keep one "
            "rating per rater and unit (several labels on one message: rate each label as "
            "present or absent)"
        )
    raters = list(dict.fromkeys(frame["rater"]))
    units = list(dict.fromkeys(frame["unit"]))
    table = pd.DataFrame(None, index=raters, columns=units, dtype=object)
    for unit, rater, value in rated.itertuples(index=False):
        table.at[rater, unit] = value
    return table


def agreement_table(
    ratings: Any,
    level: Level = "nominal",
    *,
    order: Sequence[Any] | None = None,
    statistic: Literal["alpha", "kappa"] = "alpha",
    weights: Weights = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> AgreementTable:
    """Agreement between every two raters, with intervals and n, and alpha over all raters.

    ``ratings``: long form, one row per rating (``unit, rater, value``; a DataFrame with those
    columns, dicts or tuples); any set of raters (coders, judges, a panel), not every rater
    rating every unit. ``statistic``: pairwise Krippendorff's ``alpha`` at ``level`` (the
    default) or Cohen's ``kappa`` with ``weights``. Values are coded once for the whole table, so
    every pair shares one scale. A pair sharing fewer than two units gets an undefined entry
    with its reason, not an error. ``overall`` is alpha at ``level`` over every rater."""
    level = _check_level(level)
    weights = _check_weights(weights)
    if statistic not in ("alpha", "kappa"):
        raise ConversationValueError(f"statistic={statistic!r}: use 'alpha' or 'kappa'")
    _check_boot(n_boot, confidence)
    table = ratings_table(ratings)
    raters = tuple(table.index)
    _check_shape(len(raters), table.shape[1], "ratings")
    flat = [v for row in table.itertuples(index=False) for v in row]
    scale = _encode(flat, level, order, "ratings")
    index = scale.index.reshape(len(raters), -1)
    options: dict[str, Any] = {"n_boot": n_boot, "seed": seed, "confidence": confidence}
    if statistic == "kappa":
        kappa_scale = _encode(flat, "nominal", order, "ratings")
        positions, k, labels = _kappa_categories(kappa_scale, weights, order is not None)
        positions = positions.reshape(len(raters), -1)
    pairs: dict[tuple[Hashable, Hashable], Agreement] = {}
    for i, a in enumerate(raters):
        for j in range(i + 1, len(raters)):
            b = raters[j]
            if statistic == "alpha":
                pairs[(a, b)] = _alpha_agreement(
                    index[[i, j]], scale, level, raters=(a, b), **options
                )
            else:
                both = (positions[[i, j]] >= 0).all(axis=0)
                pairs[(a, b)] = _kappa_agreement(
                    positions[[i, j]][:, both], k, labels, weights, raters=(a, b), **options
                )
    overall = _alpha_agreement(index, scale, level, raters=raters, **options)
    return AgreementTable(raters, level, statistic, pairs, overall)


__all__ = [
    "LEVELS",
    "WEIGHTS",
    "Agreement",
    "AgreementTable",
    "Undefined",
    "agreement_table",
    "alpha_interval",
    "cohen_kappa",
    "interval",
    "kappa_interval",
    "krippendorff_alpha",
    "ratings_table",
    "reason_of",
]
