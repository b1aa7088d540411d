"""Bootstrap intervals of the coefficients: a percentile bootstrap over units (each unit keeps
all its ratings), seeded and so repeatable, counting the samples that were undefined.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from numbers import Real
from typing import Any

import numpy as np

from conversation.analysis.agreement.coefficients import (
    alpha_of_counts,
    kappa_inputs,
    kappa_of,
    value_counts,
)
from conversation.analysis.agreement.values import (
    CONFIDENCE,
    Agreement,
    Level,
    Scale,
    Undefined,
    Weights,
    check_level,
    check_shape,
    check_weights,
    encode,
    rater_rows,
    reason_of,
)
from conversation.exceptions import ConversationValueError

# --- intervals ----------------------------------------------------------------------------------


def check_boot(n_boot: Any, confidence: Any) -> None:
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
    check_boot(n_boot, confidence)
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
    names, rows = rater_rows(data)
    check_shape(len(rows), len(rows[0]) if rows else 0)
    table = np.empty((len(rows), len(rows[0])), dtype=object)
    table[:] = rows
    label = name or str(getattr(statistic, "__name__", "statistic"))
    return _bootstrap(
        lambda units: statistic(table[:, units]),
        table.shape[1],
        name=label, n_boot=n_boot, seed=seed, confidence=confidence, raters=tuple(names),
    )  # fmt: skip


def alpha_agreement(
    index: np.ndarray,
    scale: Scale,
    level: Level,
    *,
    raters: tuple[Hashable, ...],
    n_boot: int,
    seed: int,
    confidence: float,
) -> Agreement:
    counts = value_counts(index, len(scale.domain))
    pairable = counts[counts.sum(axis=1) >= 2]
    name = f"alpha ({level})"
    if len(pairable) < 2:
        reason = (
            "no unit was rated by two raters"
            if len(pairable) == 0
            else "only one unit was rated by two raters; an interval needs at least 2"
        )
        check_boot(n_boot, confidence)
        estimate = alpha_of_counts(pairable, scale, level) if len(pairable) else Undefined(reason)
        return Agreement(
            name, estimate, math.nan, math.nan, len(pairable), 0, 0, confidence,
            reason=reason_of(estimate) or reason, raters=raters,
        )  # fmt: skip
    return _bootstrap(
        lambda units: alpha_of_counts(pairable[units], scale, level),
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
    level = check_level(level)
    names, rows = rater_rows(data)
    check_shape(len(rows), len(rows[0]) if rows else 0)
    scale = encode([v for row in rows for v in row], level, order, "data")
    return alpha_agreement(
        scale.index.reshape(len(rows), -1), scale, level, raters=tuple(names),
        n_boot=n_boot, seed=seed, confidence=confidence,
    )  # fmt: skip


def _kappa_name(weights: Weights) -> str:
    return "kappa" if weights is None else f"kappa ({weights})"


def kappa_agreement(
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
        check_boot(n_boot, confidence)
        estimate = kappa_of(pairs[0], pairs[1], k, weights, labels)
        reason = reason_of(estimate) or "only one unit was rated by both; an interval needs 2"
        return Agreement(
            _kappa_name(weights), estimate, math.nan, math.nan, n, 0, 0, confidence,
            reason=reason, raters=raters,
        )  # fmt: skip
    return _bootstrap(
        lambda units: kappa_of(pairs[0, units], pairs[1, units], k, weights, labels),
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
    weights = check_weights(weights)
    pairs, k, labels = kappa_inputs(a, b, weights, order)
    return kappa_agreement(
        pairs, k, labels, weights, raters=("a", "b"),
        n_boot=n_boot, seed=seed, confidence=confidence,
    )  # fmt: skip


__all__ = [
    "alpha_interval",
    "interval",
    "kappa_interval",
]
