"""The raters x raters table: pairwise agreement between every two raters and alpha over all
of them, from a long frame of ratings.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from conversation.analysis.agreement.coefficients import kappa_categories
from conversation.analysis.agreement.intervals import alpha_agreement, check_boot, kappa_agreement
from conversation.analysis.agreement.values import (
    CONFIDENCE,
    TABLE_COLUMNS,
    Agreement,
    Level,
    Weights,
    check_level,
    check_shape,
    check_weights,
    encode,
    missing,
)
from conversation.exceptions import ConversationValueError

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
    rated = frame[[not missing(v) for v in frame["value"]]]
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
    level = check_level(level)
    weights = check_weights(weights)
    if statistic not in ("alpha", "kappa"):
        raise ConversationValueError(f"statistic={statistic!r}: use 'alpha' or 'kappa'")
    check_boot(n_boot, confidence)
    table = ratings_table(ratings)
    raters = tuple(table.index)
    check_shape(len(raters), table.shape[1], "ratings")
    flat = [v for row in table.itertuples(index=False) for v in row]
    scale = encode(flat, level, order, "ratings")
    index = scale.index.reshape(len(raters), -1)
    options: dict[str, Any] = {"n_boot": n_boot, "seed": seed, "confidence": confidence}
    if statistic == "kappa":
        kappa_scale = encode(flat, "nominal", order, "ratings")
        positions, k, labels = kappa_categories(kappa_scale, weights, order is not None)
        positions = positions.reshape(len(raters), -1)
    pairs: dict[tuple[Hashable, Hashable], Agreement] = {}
    for i, a in enumerate(raters):
        for j in range(i + 1, len(raters)):
            b = raters[j]
            if statistic == "alpha":
                pairs[(a, b)] = alpha_agreement(
                    index[[i, j]], scale, level, raters=(a, b), **options
                )
            else:
                both = (positions[[i, j]] >= 0).all(axis=0)
                pairs[(a, b)] = kappa_agreement(
                    positions[[i, j]][:, both], k, labels, weights, raters=(a, b), **options
                )
    overall = alpha_agreement(index, scale, level, raters=raters, **options)
    return AgreementTable(raters, level, statistic, pairs, overall)


__all__ = [
    "AgreementTable",
    "agreement_table",
    "ratings_table",
]
