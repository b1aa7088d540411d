"""Interval estimates for the Results page: rates with Wilson intervals, means with t (or
bootstrap) intervals, and the difference between two conditions with its interval.

Pure functions over pandas frames; the maths is statsmodels' and scipy's (imported on first use:
scipy.stats costs one to two seconds to import, and a page that shows no statistics should not pay
it; the t intervals, which the Results page draws on its first render, need only Student's t
quantile, ``scipy.special.stdtrit``, the function ``scipy.stats.t.ppf`` calls, a fifth of the
import). Every estimate carries its ``n``, so a chart can always say how many rooms stand behind it.
An estimate over no data is NaN (never an exception), and so is an interval that needs more data
than there is (a t interval from one value).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

CONFIDENCE = 0.95
YES = frozenset({"yes", "true", "1", "y"})
NO = frozenset({"no", "false", "0", "n"})
NAN = float("nan")


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point estimate with its confidence interval and the number of values behind it."""

    estimate: float
    low: float
    high: float
    n: int
    method: str
    confidence: float = CONFIDENCE


@dataclass(frozen=True, slots=True)
class Difference:
    """``first - second`` (a rate or a mean) with its interval."""

    first: str
    second: str
    estimate: float
    low: float
    high: float
    n_first: int
    n_second: int
    method: str
    confidence: float = CONFIDENCE

    def describe(self, *, percent: bool = False) -> str:
        """One plain line, e.g. ``a - b: +20.0 points (95% CI -18.1 to +52.3; n = 10 vs 10)``."""
        if math.isnan(self.estimate):
            return f"{self.first} - {self.second}: not enough data (n = {self.n_first} vs {self.n_second})"
        scale, unit = (100.0, " points") if percent else (1.0, "")
        ci = (
            "no interval"
            if math.isnan(self.low)
            else f"{self.confidence:.0%} CI {self.low * scale:+.1f} to {self.high * scale:+.1f}"
        )
        return (
            f"{self.first} - {self.second}: {self.estimate * scale:+.1f}{unit} "
            f"({ci}; n = {self.n_first} vs {self.n_second}; {self.method})"
        )


def yes_no(value: Any) -> float | None:
    """1.0 for a yes (True, "Yes", "y", 1), 0.0 for a no, ``None`` for anything else."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    text = str(value).strip().lower()
    return 1.0 if text in YES else 0.0 if text in NO else None


def _alpha(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    return 1 - confidence


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Estimate:
    """A rate (``successes / n``) with its Wilson score interval (statsmodels)."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        return Estimate(NAN, NAN, NAN, 0, "Wilson", confidence)
    low, high = proportion_confint(successes, n, alpha=_alpha(confidence), method="wilson")
    return Estimate(successes / n, float(low), float(high), int(n), "Wilson", confidence)


def _values(values: Iterable[Any]) -> list[float]:
    out = pd.to_numeric(pd.Series(list(values), dtype="object"), errors="coerce").dropna()
    return [float(v) for v in out]


#: The bounds of a scale (``(low, high)``, either None): a mean's interval never leaves them.
Bounds = tuple[float | None, float | None]


def within(estimate: Estimate, bounds: Bounds | None) -> Estimate:
    """``estimate`` with its interval clipped to ``bounds``: the t interval of two scores on a
    1..5 scale (1 and 5) runs from about -22 to +28, values no score can take."""
    if bounds is None or math.isnan(estimate.low):
        return estimate
    low, high = bounds
    clipped_low = estimate.low if low is None else max(estimate.low, low)
    clipped_high = estimate.high if high is None else min(estimate.high, high)
    return replace(estimate, low=clipped_low, high=clipped_high)


def mean_t(
    values: Iterable[Any], confidence: float = CONFIDENCE, *, bounds: Bounds | None = None
) -> Estimate:
    """The mean with its Student t interval (scipy), clipped to ``bounds`` (a scale's); non-
    numbers are left out. No interval (NaN) from one value, or from values that do not vary
    (the data give no spread to build one from; "no interval", as a difference says)."""
    data = _values(values)
    n = len(data)
    if n == 0:
        return Estimate(NAN, NAN, NAN, 0, "t", confidence)
    mean = sum(data) / n
    if n == 1:
        return Estimate(mean, NAN, NAN, 1, "t", confidence)
    sem = math.sqrt(_variance(data, mean) / n)
    if sem == 0:
        return Estimate(mean, NAN, NAN, n, "t", confidence)
    half = _t_quantile(confidence, n - 1) * sem
    return within(Estimate(mean, mean - half, mean + half, n, "t", confidence), bounds)


def _variance(data: Sequence[float], mean: float) -> float:
    """The sample variance (``ddof=1``, as ``scipy.stats.sem`` and Welch's test use)."""
    return sum((v - mean) ** 2 for v in data) / (len(data) - 1)


def _t_quantile(confidence: float, df: float) -> float:
    """The two-sided Student t critical value: ``scipy.stats.t.ppf((1 + confidence) / 2, df)``."""
    from scipy.special import stdtrit

    return float(stdtrit(df, (1 + confidence) / 2))


def mean_bootstrap(
    values: Iterable[Any],
    confidence: float = CONFIDENCE,
    *,
    resamples: int = 2000,
    seed: int = 0,
    bounds: Bounds | None = None,
) -> Estimate:
    """The mean with a BCa bootstrap interval (``scipy.stats.bootstrap``, seeded: repeatable);
    no interval from one value or values that do not vary, as :func:`mean_t`."""
    import numpy as np
    from scipy import stats

    data = _values(values)
    n = len(data)
    if n == 0:
        return Estimate(NAN, NAN, NAN, 0, "bootstrap", confidence)
    mean = sum(data) / n
    if n == 1 or len(set(data)) == 1:
        return Estimate(mean, NAN, NAN, n, "bootstrap", confidence)
    result = stats.bootstrap(
        (np.asarray(data),),
        np.mean,
        confidence_level=confidence,
        n_resamples=resamples,
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    found = Estimate(mean, float(interval.low), float(interval.high), n, "bootstrap", confidence)
    return within(found, bounds)


def _groups(frame: pd.DataFrame, by: str, order: Sequence[str] | None) -> list[str]:
    present = [str(v) for v in pd.unique(frame[by].astype(str))] if not frame.empty else []
    if order is None:
        return sorted(present)
    known = [str(c) for c in order]
    return known + sorted(c for c in present if c not in known)


RATE_COLUMNS = ["condition", "n", "successes", "rate", "low", "high"]
MEAN_COLUMNS = ["condition", "n", "mean", "low", "high"]


def rates_by_condition(
    frame: pd.DataFrame,
    column: str,
    *,
    by: str = "condition",
    order: Sequence[str] | None = None,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """Per condition: how many rooms answered (``n``, yes or no only), how many said yes, the
    rate and its Wilson interval. ``column`` holds yes/no values (see :func:`yes_no`). Rows in
    ``order`` (the design's), conditions missing from it after them; a condition in ``order``
    with no answer gets ``n = 0``."""
    rows = []
    coded = frame.assign(_yes=frame[column].map(yes_no)) if not frame.empty else frame
    for condition in _groups(frame, by, order):
        part = coded[coded[by].astype(str) == condition]["_yes"].dropna() if len(coded) else []
        n, yes = len(part), int(sum(part))
        est = wilson(yes, n, confidence)
        rows.append((condition, n, yes, est.estimate, est.low, est.high))
    return pd.DataFrame(rows, columns=RATE_COLUMNS)


def means_by_condition(
    frame: pd.DataFrame,
    column: str,
    *,
    by: str = "condition",
    order: Sequence[str] | None = None,
    method: str = "t",
    confidence: float = CONFIDENCE,
    bounds: Bounds | None = None,
) -> pd.DataFrame:
    """Per condition: ``n`` numeric values, their mean and its interval (``method``: ``t`` or
    ``bootstrap``; clipped to ``bounds``, a scale's lowest and highest values). Ordered as
    :func:`rates_by_condition`."""
    if method not in ("t", "bootstrap"):
        raise ValueError(f"method={method!r}: use 't' or 'bootstrap'")
    estimate = mean_t if method == "t" else mean_bootstrap
    rows = []
    for condition in _groups(frame, by, order):
        part = frame[frame[by].astype(str) == condition][column] if len(frame) else []
        est = estimate(part, confidence, bounds=bounds)
        rows.append((condition, est.n, est.estimate, est.low, est.high))
    return pd.DataFrame(rows, columns=MEAN_COLUMNS)


def rate_difference(
    frame: pd.DataFrame,
    column: str,
    first: str,
    second: str,
    *,
    by: str = "condition",
    confidence: float = CONFIDENCE,
) -> Difference:
    """The yes-rate of ``first`` minus that of ``second`` with Newcombe's interval (built from
    the two Wilson intervals; statsmodels ``confint_proportions_2indep``)."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    def counts(condition: str) -> tuple[int, int]:
        part = frame[frame[by].astype(str) == condition][column].map(yes_no).dropna()
        return int(sum(part)), len(part)

    (y1, n1), (y2, n2) = counts(first), counts(second)
    if n1 == 0 or n2 == 0:
        return Difference(first, second, NAN, NAN, NAN, n1, n2, "Newcombe", confidence)
    low, high = confint_proportions_2indep(
        y1, n1, y2, n2, method="newcomb", compare="diff", alpha=_alpha(confidence)
    )
    return Difference(
        first, second, y1 / n1 - y2 / n2, float(low), float(high), n1, n2, "Newcombe", confidence
    )


def mean_difference(
    frame: pd.DataFrame,
    column: str,
    first: str,
    second: str,
    *,
    by: str = "condition",
    confidence: float = CONFIDENCE,
) -> Difference:
    """The mean of ``first`` minus that of ``second`` with Welch's t interval (the interval
    ``scipy.stats.ttest_ind(a, b, equal_var=False).confidence_interval`` gives)."""
    a = _values(frame[frame[by].astype(str) == first][column])
    b = _values(frame[frame[by].astype(str) == second][column])
    if not a or not b:
        return Difference(first, second, NAN, NAN, NAN, len(a), len(b), "Welch t", confidence)
    diff = sum(a) / len(a) - sum(b) / len(b)
    if len(a) < 2 or len(b) < 2 or (len(set(a)) == 1 and len(set(b)) == 1):
        return Difference(first, second, diff, NAN, NAN, len(a), len(b), "Welch t", confidence)
    va, vb = (_variance(x, sum(x) / len(x)) / len(x) for x in (a, b))
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = _t_quantile(confidence, df) * math.sqrt(va + vb)
    return Difference(
        first,
        second,
        diff,
        diff - half,
        diff + half,
        len(a),
        len(b),
        "Welch t",
        confidence,
    )


__all__ = [
    "CONFIDENCE",
    "Difference",
    "Estimate",
    "MEAN_COLUMNS",
    "RATE_COLUMNS",
    "Bounds",
    "within",
    "mean_bootstrap",
    "mean_difference",
    "mean_t",
    "means_by_condition",
    "rate_difference",
    "rates_by_condition",
    "wilson",
    "yes_no",
]
