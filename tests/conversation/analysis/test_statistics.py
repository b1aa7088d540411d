"""Interval estimates against known values (statsmodels and scipy do the maths)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from conversation.analysis import statistics as st


def test_wilson_interval_for_7_of_10() -> None:
    est = st.wilson(7, 10)
    assert (est.estimate, est.n, est.method) == (0.7, 10, "Wilson")
    assert est.low == pytest.approx(0.3968, abs=1e-4)
    assert est.high == pytest.approx(0.8922, abs=1e-4)
    # Wilson never leaves [0, 1], even at the edges (a Wald interval would be [1, 1] here).
    edge = st.wilson(10, 10)
    assert edge.high == pytest.approx(1.0) and edge.low == pytest.approx(0.7225, abs=1e-4)
    assert math.isnan(st.wilson(0, 0).estimate)


def test_t_interval_of_a_mean() -> None:
    est = st.mean_t([1, 2, 3, 4, 5])
    # 3 +- t(0.975, 4) * sqrt(2.5) / sqrt(5) = 3 +- 2.7764 * 0.7071
    assert est.estimate == 3 and est.low == pytest.approx(1.0368, abs=1e-4)
    assert est.high == pytest.approx(4.9632, abs=1e-4)
    assert st.mean_t(["x", None, 4]).n == 1 and math.isnan(st.mean_t([4]).low)
    assert st.mean_t([]).n == 0


def test_bootstrap_interval_is_repeatable_and_covers_the_mean() -> None:
    values = [1, 2, 3, 4, 5, 9, 2, 3]
    first, second = st.mean_bootstrap(values), st.mean_bootstrap(values)
    assert first == second and first.method == "bootstrap"
    assert first.low < first.estimate < first.high


def _answers() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "condition": ["a"] * 10 + ["b"] * 10 + ["b"],
            "answer": ["Yes"] * 7 + ["No"] * 3 + [True] * 3 + [False] * 7 + ["maybe"],
            "messages": list(range(10)) + list(range(10, 20)) + [None],
        }
    )


def test_rates_by_condition_follow_the_design_order_and_count_only_yes_no() -> None:
    rates = st.rates_by_condition(_answers(), "answer", order=["b", "a", "never run"])
    assert list(rates["condition"]) == ["b", "a", "never run"]
    assert list(rates["n"]) == [10, 10, 0] and list(rates["successes"]) == [3, 7, 0]
    a = rates.set_index("condition").loc["a"]
    assert a["low"] == pytest.approx(0.3968, abs=1e-4)


def test_means_by_condition() -> None:
    means = st.means_by_condition(_answers(), "messages")
    assert list(means["condition"]) == ["a", "b"] and list(means["n"]) == [10, 10]
    assert list(means["mean"]) == [4.5, 14.5]
    with pytest.raises(ValueError, match="method"):
        st.means_by_condition(_answers(), "messages", method="magic")


def test_differences_between_two_conditions() -> None:
    rate = st.rate_difference(_answers(), "answer", "a", "b")
    assert rate.estimate == pytest.approx(0.4) and (rate.n_first, rate.n_second) == (10, 10)
    # Newcombe's hybrid score interval for 7/10 - 3/10.
    assert rate.low == pytest.approx(-0.0288, abs=1e-3) and rate.high == pytest.approx(
        0.6718, abs=1e-3
    )
    assert "+40.0 points" in rate.describe(percent=True)
    mean = st.mean_difference(_answers(), "messages", "b", "a")
    assert mean.estimate == 10 and mean.low < 10 < mean.high and mean.method == "Welch t"
    missing = st.rate_difference(_answers(), "answer", "a", "zzz")
    assert math.isnan(missing.estimate) and "not enough data" in missing.describe()


def test_t_intervals_equal_scipy_stats_without_importing_it() -> None:
    """The t quantile comes from scipy.special (a fifth of scipy.stats' import on a first
    render); the intervals are scipy.stats' to 1e-9, for a mean and for Welch's difference."""
    from scipy import stats as reference

    data = [3.0, 4.5, 2.0, 7.25, 5.0, 1.5]
    got = st.mean_t(data, 0.9)
    low, high = reference.t.interval(
        0.9, len(data) - 1, loc=got.estimate, scale=reference.sem(data)
    )
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-9)
    a, b = [1.0, 2.0, 4.0, 8.0], [3.0, 3.5, 2.5, 9.0, 11.0, 0.5]
    frame = pd.DataFrame({"condition": ["a"] * len(a) + ["b"] * len(b), "x": a + b})
    diff = st.mean_difference(frame, "x", "a", "b", confidence=0.95)
    ci = reference.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (diff.low, diff.high) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_an_interval_never_leaves_its_scale() -> None:
    """Issue 35: scores 1 and 5 on a 1..5 rubric gave a t interval of about -22 to +28."""
    wide = st.mean_t([1, 5])
    assert wide.low < -20 and wide.high > 20  # what the t formula gives
    bounded = st.mean_t([1, 5], bounds=(1.0, 5.0))
    assert (bounded.estimate, bounded.low, bounded.high) == (3.0, 1.0, 5.0)
    boot = st.mean_bootstrap([1, 2, 5, 5, 5], bounds=(1.0, 5.0))
    assert 1.0 <= boot.low <= boot.estimate <= boot.high <= 5.0
    frame = pd.DataFrame({"condition": ["a", "a", "b", "b"], "v": [1, 5, 2, 3]})
    per = st.means_by_condition(frame, "v", bounds=(1.0, 5.0))
    assert per["low"].min() >= 1.0 and per["high"].max() <= 5.0
    assert st.mean_t([1, 5], bounds=(None, 4.0)).high == 4.0  # one bound is enough


def test_values_that_do_not_vary_have_no_interval_as_a_difference_says() -> None:
    """Issue 35: a zero-variance condition printed low = high = mean, where the difference line
    said "no interval"."""
    for estimate in (st.mean_t([4, 4, 4]), st.mean_bootstrap([4, 4, 4])):
        assert estimate.estimate == 4 and math.isnan(estimate.low) and math.isnan(estimate.high)
    frame = pd.DataFrame({"condition": ["a"] * 3 + ["b"] * 3, "v": [4, 4, 4, 2, 2, 2]})
    assert "no interval" in st.mean_difference(frame, "v", "a", "b").describe()
    per = st.means_by_condition(frame, "v")
    assert per["low"].isna().all() and per["high"].isna().all()
