"""The coefficients: Krippendorff's alpha (any number of raters, missing values) and Cohen's
kappa (two raters, optionally weighted), computed by ``krippendorff`` and scikit-learn (imported
on first use).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from conversation.analysis.agreement.values import (
    Level,
    Scale,
    Undefined,
    Weights,
    check_level,
    check_shape,
    check_weights,
    encode,
    rater_rows,
)
from conversation.exceptions import ConversationValueError

# --- Krippendorff's alpha -----------------------------------------------------------------------


def value_counts(index: np.ndarray, n_values: int) -> np.ndarray:
    """units x values: how many raters gave each value to each unit (``index``: raters x units,
    -1 missing)."""
    counts = np.zeros((index.shape[1], n_values), dtype=np.int64)
    for row in index:
        known = row >= 0
        np.add.at(counts, (np.nonzero(known)[0], row[known]), 1)
    return counts


def alpha_of_counts(counts: np.ndarray, scale: Scale, level: Level) -> float:
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
    level = check_level(level)
    names, rows = rater_rows(data)
    check_shape(len(rows), len(rows[0]) if rows else 0)
    flat = [v for row in rows for v in row]
    scale = encode(flat, level, order, "data")
    index = scale.index.reshape(len(rows), -1)
    return alpha_of_counts(value_counts(index, len(scale.domain)), scale, level)


# --- Cohen's kappa ------------------------------------------------------------------------------


def kappa_categories(
    scale: Scale, weights: Weights, ordered: bool
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


def kappa_of(a: np.ndarray, b: np.ndarray, k: int, weights: Weights, labels: list[Any]) -> float:
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


def kappa_inputs(
    a: Sequence[Any], b: Sequence[Any], weights: Weights, order: Sequence[Any] | None
) -> tuple[np.ndarray, int, list[Any]]:
    """Position pairs (2 x rated-by-both) for a and b, the number of categories and labels."""
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ConversationValueError(
            f"a and b must rate the same units (one entry each, None where not rated); "
            f"a has {len(a)}, b has {len(b)}"
        )
    check_shape(2, len(a), "a and b")
    scale = encode(a + b, "nominal", order, "a and b")
    index, k, labels = kappa_categories(scale, weights, order is not None)
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
    weights = check_weights(weights)
    pairs, k, labels = kappa_inputs(a, b, weights, order)
    return kappa_of(pairs[0], pairs[1], k, weights, labels)


__all__ = [
    "cohen_kappa",
    "krippendorff_alpha",
]
