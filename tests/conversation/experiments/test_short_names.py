"""Condition short names: given by the researcher (validated) or derived from what differs."""

from __future__ import annotations

import importlib

import pytest

from conversation.exceptions import ConversationValueError

design = importlib.import_module("conversation.experiments.design")
Condition = design.Condition


def test_default_short_names_abbreviate_what_differs() -> None:
    conditions = [
        Condition("temp=0.7, model=gpt-4o", {}),
        Condition("temp=0.2, model=gpt-4o", {}),
        Condition("temp=0.7, model=claude-3", {}),
    ]
    assert design.short_names(conditions) == ["t0.7·gpt4o", "t0.2·gpt4o", "t0.7·claude3"]
    crossed = design.crossed_conditions([("Buyer", "budget", ["$5", "$9"])])
    assert design.short_names(design.with_turn_limits(crossed, {}, [4, 8])) == [
        "bb$5·mt4",
        "bb$5·mt8",
        "bb$9·mt4",
        "bb$9·mt8",
    ]
    assert design.short_names(design.with_prompts([Condition("baseline", {})], ["a", "b"])) == [
        "p1",
        "p2",
    ]
    # Free-text labels stay readable; the same abbreviation for two factors keeps the keys.
    assert design.short_names([Condition("tight budget", {}), Condition("loose", {})]) == [
        "tight budget",
        "loose",
    ]
    assert all(len(n) <= design.MAX_SHORT_NAME for n in design.short_names(crossed))


def test_given_short_names_win_and_are_stored_with_the_design() -> None:
    conditions = [Condition("a=1", {}).named("  low "), Condition("a=2", {})]
    assert design.short_names(conditions) == ["low", "a2"]
    config = design.design({"agents": [], "planner": {"kind": "round_robin"}}, conditions, 1)
    assert config["conditions"][0]["short"] == "low"
    assert design.condition_names(config) == {"a=1": "low", "a=2": "a2"}
    assert list(design.condition_names(config)) == ["a=1", "a=2"]  # design order
    assert Condition("x", {}).named("").short is None
    # A derived name never takes a given one: it falls back to its position.
    assert design.short_names([Condition("a=1", {}, short="a2"), Condition("a=2", {})]) == [
        "a2",
        "c2",
    ]


@pytest.mark.parametrize(
    ("shorts", "message"),
    [
        (["same", "same"], "unique"),
        (["x" * 25, None], "1 to 24 characters"),
        (["two\nlines", None], "one line"),
    ],
)
def test_bad_short_names_are_refused_naming_the_fix(shorts: list, message: str) -> None:
    conditions = [Condition("a=1", {}, short=shorts[0]), Condition("a=2", {}, short=shorts[1])]
    with pytest.raises(ConversationValueError, match=message):
        design.plan(conditions, 1)


def test_sentences_that_differ_in_a_few_words_are_named_by_those_words() -> None:
    """Issue 24: a buyer's private value of $10 vs $6 was named "c1" and "bpvThemugiswort"."""
    from conversation.experiments.design import Condition, short_names

    worth = "Buyer.private_value=The mug is worth {} to you."
    conditions = [Condition(label=worth.format(v), traits={}) for v in ("$10", "$6")]
    assert short_names(conditions) == ["value $10", "value $6"]
    # two derived names that clash both fall back to their position
    same = [Condition(label=f"note=x{i}" + "y" * 30, traits={}) for i in (1, 2)]
    assert short_names(same)[0] != short_names(same)[1]
