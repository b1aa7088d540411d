"""Agreement statistics against published values, against the libraries on random tables, and
at their edges (krippendorff and scikit-learn do the maths; these tests check what we feed them)."""

from __future__ import annotations

import math
import pickle

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from conversation.analysis import agreement as ag
from conversation.analysis.agreement.values import missing
from conversation.exceptions import ConversationValueError

NAN = float("nan")

#: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x
#: 12 units, values 1-5, with missing values (None here, NaN in one place to mix both).
KRIPPENDORFF = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
#: Its published alphas.
PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}
WORDS = ["very low", "low", "mid", "high", "very high"]


def _as_words(table: list[list[object]]) -> list[list[object]]:
    return [[None if missing(v) else WORDS[int(v) - 1] for v in row] for row in table]


# --- Krippendorff's alpha -----------------------------------------------------------------------


@pytest.mark.parametrize("level", list(PUBLISHED))
def test_krippendorffs_published_example_with_missing_values(level: str) -> None:
    assert round(ag.krippendorff_alpha(KRIPPENDORFF, level), 3) == PUBLISHED[level]


def test_the_published_example_as_ordered_labels() -> None:
    words = _as_words(KRIPPENDORFF)
    assert round(ag.krippendorff_alpha(words, "ordinal", order=WORDS), 3) == 0.815
    assert round(ag.krippendorff_alpha(words, "nominal"), 3) == 0.743
    # The order matters: reversed it is the same scale; shuffled it is another one.
    assert ag.krippendorff_alpha(words, "ordinal", order=WORDS[::-1]) == pytest.approx(
        ag.krippendorff_alpha(words, "ordinal", order=WORDS)
    )
    shuffled = ["mid", "very low", "high", "low", "very high"]
    assert round(ag.krippendorff_alpha(words, "ordinal", order=shuffled), 3) != 0.815


def test_every_table_shape_gives_the_same_alpha() -> None:
    expected = ag.krippendorff_alpha(KRIPPENDORFF, "interval")
    names = ["A", "B", "C", "D"]
    frame = pd.DataFrame(KRIPPENDORFF, index=names)
    assert ag.krippendorff_alpha(frame, "interval") == pytest.approx(expected)
    assert ag.krippendorff_alpha(dict(zip(names, KRIPPENDORFF, strict=True)), "interval") == (
        pytest.approx(expected)
    )
    array = np.array(KRIPPENDORFF, dtype=float)
    assert ag.krippendorff_alpha(array, "interval") == pytest.approx(expected)


def test_units_rated_once_change_nothing() -> None:
    padded = [[*row, extra] for row, extra in zip(KRIPPENDORFF, [5, None, None, None], strict=True)]
    assert ag.krippendorff_alpha(padded, "interval") == pytest.approx(0.849, abs=5e-4)
    assert ag.alpha_interval(padded, "interval", n_boot=10).n_units == 11


_rating = st.one_of(st.none(), st.integers(1, 5))


@settings(max_examples=60, deadline=None)
@given(
    table=st.integers(2, 4).flatmap(
        lambda raters: st.integers(2, 9).flatmap(
            lambda units: st.lists(
                st.lists(_rating, min_size=units, max_size=units),
                min_size=raters,
                max_size=raters,
            )
        )
    ),
    level=st.sampled_from(ag.LEVELS),
)
def test_alpha_agrees_with_the_library_on_random_tables(
    table: list[list[int | None]], level: str
) -> None:
    ours = ag.krippendorff_alpha(table, level)
    data = np.array([[NAN if v is None else v for v in row] for row in table], dtype=float)
    try:
        with np.errstate(all="ignore"):
            theirs = krippendorff.alpha(data, level_of_measurement=level)
    except ValueError:  # the library refuses: one value in all, or no unit rated twice
        theirs = NAN
    if math.isnan(theirs):
        assert isinstance(ours, ag.Undefined) and ours.reason
    else:
        assert ours == pytest.approx(theirs)
    # The same ratings as ordered labels give the same ordinal alpha.
    if level == "ordinal":
        words = _as_words(table)
        labelled = ag.krippendorff_alpha(words, "ordinal", order=WORDS)
        assert labelled == pytest.approx(ours, nan_ok=True)


# --- Cohen's kappa ------------------------------------------------------------------------------

#: Ten units on a 3-point scale; the confusion table (rows a, columns b) is
#:     [[2, 1, 0], [0, 2, 1], [1, 0, 3]]   with margins 3, 3, 4 both ways.
#: Unweighted: p_o = 7/10, p_e = (9 + 9 + 16)/100 = 0.34, kappa = 0.36/0.66 = 0.5455.
#: Linear: observed weighted disagreement 1 + 1 + 2 = 4; expected sum |i-j| r_i c_j / n =
#:     (18 + 24 + 2 * 24)/10 = 9; kappa = 1 - 4/9 = 0.5556.
#: Quadratic: observed 1 + 1 + 4 = 6; expected (18 + 24 + 4 * 24)/10 = 13.8; 1 - 6/13.8 = 0.5652.
HAND_A = [1, 1, 1, 2, 2, 2, 3, 3, 3, 3]
HAND_B = [1, 1, 2, 2, 2, 3, 1, 3, 3, 3]
HAND = {None: 0.36 / 0.66, "linear": 1 - 4 / 9, "quadratic": 1 - 6 / 13.8}


def test_kappa_of_the_textbook_two_by_two_table() -> None:
    # Wikipedia's "Cohen's kappa" example: 50 grant proposals, 20 yes-yes, 5 yes-no, 10 no-yes,
    # 15 no-no: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert ag.cohen_kappa(a, b) == pytest.approx(0.4)


@pytest.mark.parametrize("weights", list(HAND))
def test_kappa_worked_by_hand(weights: str | None) -> None:
    assert ag.cohen_kappa(HAND_A, HAND_B, weights) == pytest.approx(HAND[weights], abs=1e-4)
    words = ["low", "mid", "high"]
    a, b = ([words[v - 1] for v in r] for r in (HAND_A, HAND_B))
    assert ag.cohen_kappa(a, b, weights, order=words) == pytest.approx(HAND[weights], abs=1e-4)


def test_weighted_kappa_counts_an_unused_middle_value_as_a_step() -> None:
    # Ratings on 1..5 that only use 1, 2 and 5: 2 vs 5 is three steps apart, not one.
    a = [1, 2, 5, 1, 2, 5, 1, 5]
    b = [2, 2, 5, 1, 5, 2, 1, 5]
    full = cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5], weights="quadratic")
    assert ag.cohen_kappa(a, b, "quadratic") == pytest.approx(full)
    assert full != pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))


def test_kappa_leaves_out_units_either_rater_skipped() -> None:
    a = [*HAND_A, None, 2, NAN]
    b = [*HAND_B, 3, None, 1]
    assert ag.cohen_kappa(a, b, "linear") == pytest.approx(HAND["linear"], abs=1e-4)
    assert ag.kappa_interval(a, b, "linear", n_boot=10).n_units == 10


_pair = st.integers(2, 30).flatmap(
    lambda n: st.tuples(
        st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=n, max_size=n),
        st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=n, max_size=n),
    )
)


@settings(max_examples=80, deadline=None)
@given(pair=_pair, weights=st.sampled_from(ag.WEIGHTS))
def test_kappa_agrees_with_scikit_learn_on_random_ratings(
    pair: tuple[list[int | None], list[int | None]], weights: str | None
) -> None:
    a, b = pair
    ours = ag.cohen_kappa(a, b, weights)
    kept = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    values = {v for p in kept for v in p}
    if len(values) < 2:
        assert isinstance(ours, ag.Undefined)
        return
    labels = list(range(min(values), max(values) + 1)) if weights else sorted(values)
    theirs = cohen_kappa_score([x for x, _ in kept], [y for _, y in kept], labels=labels,
                               weights=weights)  # fmt: skip
    assert ours == pytest.approx(theirs)


# --- bootstrap intervals ------------------------------------------------------------------------


def test_the_interval_is_repeatable_by_seed_and_contains_the_estimate() -> None:
    first = ag.alpha_interval(KRIPPENDORFF, "interval", n_boot=500, seed=7)
    assert first == ag.alpha_interval(KRIPPENDORFF, "interval", n_boot=500, seed=7)
    other = ag.alpha_interval(KRIPPENDORFF, "interval", n_boot=500, seed=8)
    assert (other.low, other.high) != (first.low, first.high)
    assert first.estimate == other.estimate == pytest.approx(0.849, abs=5e-4)
    assert first.low <= first.estimate <= first.high
    assert (first.n_units, first.n_boot, first.n_undefined) == (11, 500, 0)
    assert first.statistic == "alpha (interval)" and "0.849" in first.describe()

    kappa = ag.kappa_interval(HAND_A * 3, HAND_B * 3, "linear", n_boot=100, seed=1)
    assert kappa == ag.kappa_interval(HAND_A * 3, HAND_B * 3, "linear", n_boot=100, seed=1)
    assert kappa.low <= kappa.estimate <= kappa.high and kappa.n_units == 30


def test_a_wider_confidence_gives_a_wider_interval() -> None:
    narrow = ag.alpha_interval(KRIPPENDORFF, "ordinal", n_boot=400, seed=3, confidence=0.8)
    wide = ag.alpha_interval(KRIPPENDORFF, "ordinal", n_boot=400, seed=3, confidence=0.99)
    assert wide.low < narrow.low <= narrow.high < wide.high


def test_the_generic_interval_matches_the_fast_one() -> None:
    complete = [row[:9] for row in KRIPPENDORFF]  # every one of these units is rated twice
    fast = ag.alpha_interval(complete, "ratio", n_boot=200, seed=5)
    generic = ag.interval(
        lambda t: ag.krippendorff_alpha(t, "ratio"), complete, n_boot=200, seed=5, name="r"
    )
    assert (generic.estimate, generic.low, generic.high) == pytest.approx(
        (fast.estimate, fast.low, fast.high)
    )
    kappa = ag.interval(lambda t: ag.cohen_kappa(t[0], t[1]), [HAND_A, HAND_B], n_boot=50)
    assert kappa.estimate == pytest.approx(HAND[None]) and kappa.n_units == 10


def test_undefined_bootstrap_samples_are_counted_and_left_out() -> None:
    # All the variation is in unit 0: a resample without it has none, so alpha is undefined.
    n = 10
    data = [["a"] * n, ["b"] + ["a"] * (n - 1)]
    result = ag.alpha_interval(data, n_boot=400, seed=11)
    rng = np.random.default_rng(11)
    without_unit_0 = sum(0 not in rng.integers(0, n, n) for _ in range(400))
    assert 0 < result.n_undefined == without_unit_0 < 400
    assert not math.isnan(result.low) and result.low <= result.estimate <= result.high
    assert f"{without_unit_0} undefined" in result.describe()


# --- edges --------------------------------------------------------------------------------------


def test_no_variation_is_an_undefined_value_with_its_reason() -> None:
    same = ag.krippendorff_alpha([["x", "x", None], ["x", "x", "x"]])
    assert math.isnan(same) and isinstance(same, ag.Undefined)
    assert same.reason == "no variation: every rating is 'x'"
    assert ag.reason_of(same) == same.reason and ag.reason_of(0.5) is None
    kappa = ag.cohen_kappa([2, 2, 2], [2, 2, 2], "linear")
    assert isinstance(kappa, ag.Undefined) and "both raters gave every unit 2" in kappa.reason
    # One rater constant and the other not is defined: kappa is 0 (no better than chance).
    assert ag.cohen_kappa(["x", "x", "x"], ["x", "y", "x"]) == 0.0
    assert pickle.loads(pickle.dumps(same)).reason == same.reason
    interval = ag.alpha_interval([["x", "x"], ["x", "x"]], n_boot=10)
    assert math.isnan(interval.low) and interval.reason == same.reason
    assert "undefined (no variation" in interval.describe()


def test_no_unit_rated_twice_is_undefined() -> None:
    alpha = ag.krippendorff_alpha([[1, None, 3], [None, 2, None]], "interval")
    assert isinstance(alpha, ag.Undefined) and alpha.reason == "no unit was rated by two raters"
    kappa = ag.cohen_kappa([1, None], [None, 2])
    assert isinstance(kappa, ag.Undefined) and "rated by both" in kappa.reason


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: ag.krippendorff_alpha([[1, 2, 3]]), ["1 rater", "at least 2 raters"]),
        (lambda: ag.krippendorff_alpha([[1], [2]]), ["1 unit", "at least 2 units"]),
        (lambda: ag.cohen_kappa([1], [1]), ["a and b", "1 unit"]),
        (lambda: ag.krippendorff_alpha(KRIPPENDORFF, "nominl"), ["level='nominl'", "ordinal"]),
        (lambda: ag.cohen_kappa([1, 2], [1, 2], "cubic"), ["weights='cubic'", "quadratic"]),
        (
            lambda: ag.krippendorff_alpha([["a", "b"], ["a", "a"]], "interval"),
            ["level='interval' needs numbers", "'a'"],
        ),
        (lambda: ag.krippendorff_alpha([["a", "b"], ["a", "a"]], "ordinal"), ["order=[...]"]),
        (
            lambda: ag.krippendorff_alpha([["a", "b"], ["a", "c"]], "ordinal", order=["a", "b"]),
            ["'c'", "not in order"],
        ),
        (
            lambda: ag.krippendorff_alpha([[1, 2], [1, 3]], "interval", order=[1, 2, 3]),
            ["order=", "interval"],
        ),
        (lambda: ag.krippendorff_alpha([[1, -2], [1, 3]], "ratio"), ["level='ratio'", "-2"]),
        (lambda: ag.krippendorff_alpha([[1, 2, 3], [1, 2]]), ["row lengths differ"]),
        (lambda: ag.krippendorff_alpha([[1, 2], [1, math.inf]], "interval"), ["infinite"]),
        (lambda: ag.krippendorff_alpha("ab"), ["raters x units table"]),
        (lambda: ag.cohen_kappa([1, 2, 3], [1, 2]), ["a has 3, b has 2"]),
        (lambda: ag.cohen_kappa(["a", "b"], ["a", "a"], "linear"), ["weights='linear'", "order"]),
        (lambda: ag.cohen_kappa([1.5, 2], [1, 2], "linear"), ["not whole", "order"]),
        (lambda: ag.alpha_interval(KRIPPENDORFF, n_boot=0), ["n_boot=0"]),
        (lambda: ag.alpha_interval(KRIPPENDORFF, confidence=95), ["confidence=95"]),
    ],
)
def test_bad_input_names_the_field(call: object, words: list[str]) -> None:
    with pytest.raises(ConversationValueError) as caught:
        call()  # type: ignore[operator]
    assert isinstance(caught.value, ValueError)
    for word in words:
        assert word in str(caught.value)


# --- the raters x raters table ------------------------------------------------------------------


def _long(table: list[list[object]], names: list[str]) -> pd.DataFrame:
    rows = [
        (f"m{unit}", name, value)
        for name, row in zip(names, table, strict=True)
        for unit, value in enumerate(row)
        if not missing(value)
    ]
    return pd.DataFrame(rows, columns=["unit", "rater", "value"])


def test_the_table_holds_every_pair_and_the_overall_alpha() -> None:
    names = ["ann", "bob", "judge", "panel"]
    ratings = _long(KRIPPENDORFF, names)
    table = ag.agreement_table(ratings, "ordinal", n_boot=100, seed=2)
    assert table.raters == tuple(names) and len(table.pairs) == 6
    assert table.overall is not None and round(table.overall.estimate, 3) == 0.815
    for i, j in [(0, 1), (1, 3), (0, 2)]:
        pair = table.pair(names[j], names[i])
        two = [KRIPPENDORFF[i], KRIPPENDORFF[j]]
        alone = ag.alpha_interval(two, "ordinal", n_boot=100, seed=2)
        assert pair.estimate == pytest.approx(ag.krippendorff_alpha(two, "ordinal"))
        assert (pair.low, pair.high, pair.n_units) == (alone.low, alone.high, alone.n_units)
        assert pair.raters == (names[i], names[j])
    matrix = table.matrix()
    assert list(matrix.index) == names and matrix.equals(matrix.T)
    assert math.isnan(matrix.loc["ann", "ann"])
    assert matrix.loc["bob", "ann"] == pytest.approx(table.pair("ann", "bob").estimate)
    assert table.matrix("n_units").loc["ann", "judge"] == 8  # units 1-8 (ann skipped unit 0)
    frame = table.frame()
    assert list(frame.columns) == ag.TABLE_COLUMNS and len(frame) == 6


def test_the_kappa_table_matches_cohen_kappa_pair_by_pair() -> None:
    ratings = _long([HAND_A, HAND_B, HAND_A[::-1]], ["a", "b", "c"])
    table = ag.agreement_table(ratings, statistic="kappa", weights="linear", n_boot=20)
    assert table.pair("a", "b").estimate == pytest.approx(HAND["linear"])
    assert table.pair("b", "c").estimate == pytest.approx(
        ag.cohen_kappa(HAND_B, HAND_A[::-1], "linear")
    )
    assert table.pair("a", "b").statistic == "kappa (linear)"


def test_a_pair_with_too_few_shared_units_is_undefined_not_an_error() -> None:
    ratings = [
        ("u1", "ann", "x"), ("u2", "ann", "y"), ("u3", "ann", "x"),
        ("u1", "bob", "x"), ("u2", "bob", "y"),
        ("u3", "cat", "y"),
    ]  # fmt: skip
    table = ag.agreement_table(ratings, n_boot=20)
    assert math.isnan(table.pair("bob", "cat").estimate)
    assert table.pair("bob", "cat").reason == "no unit was rated by two raters"
    lone = table.pair("ann", "cat")  # one shared unit: an estimate may exist, no interval
    assert lone.n_units == 1 and math.isnan(lone.low) and lone.reason
    as_dicts = [{"unit": u, "rater": r, "value": v} for u, r, v in ratings]
    assert ag.agreement_table(as_dicts, n_boot=20).frame().equals(table.frame())


def test_the_table_refuses_what_it_cannot_read() -> None:
    with pytest.raises(ConversationValueError, match="rated unit 'u1' more than once"):
        ag.agreement_table([("u1", "ann", "x"), ("u1", "ann", "y"), ("u1", "bob", "x")])
    with pytest.raises(ConversationValueError, match="lacks value"):
        ag.agreement_table(pd.DataFrame({"unit": [1], "rater": ["a"]}))
    with pytest.raises(ConversationValueError, match="1 rater"):
        ag.agreement_table([("u1", "ann", "x"), ("u2", "ann", "y")])
    with pytest.raises(ConversationValueError, match="statistic='tau'"):
        ag.agreement_table([("u1", "ann", "x")], statistic="tau")  # type: ignore[arg-type]
