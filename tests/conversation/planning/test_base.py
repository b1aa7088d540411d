"""Shared policy machinery: seeds, per-turn generators, rule fallbacks, activity messages."""

from __future__ import annotations

import random

import pytest

from conversation.exceptions import ConversationValueError
from conversation.planning.base import (
    activity_messages,
    check_seed,
    first_permitted,
    fresh_seed,
    turn_rng,
)
from conversation.planning.events import RoomEvent
from conversation.planning.transitions import TransitionRules

E = RoomEvent


def test_turn_rng_is_a_pure_function_of_seed_and_turn() -> None:
    draws = [turn_rng(42, t).random() for t in range(5)]
    assert draws == [turn_rng(42, t).random() for t in range(5)]
    assert len(set(draws)) == 5
    assert turn_rng(42, 0).random() != turn_rng(43, 0).random()
    assert isinstance(turn_rng("x", 0), random.Random)


@pytest.mark.parametrize("seed", [0, 7, -3, "room-1"])
def test_check_seed_keeps_valid_seeds(seed: int | str) -> None:
    assert check_seed("P", seed) == seed


def test_check_seed_makes_a_concrete_seed_for_none() -> None:
    assert isinstance(check_seed("P", None), int)
    assert isinstance(fresh_seed(), int)
    assert fresh_seed() != fresh_seed()


@pytest.mark.parametrize("seed", [1.0, True, b"x", [1]])
def test_check_seed_rejects(seed: object) -> None:
    with pytest.raises(ConversationValueError, match=r"P\.seed"):
        check_seed("P", seed)


@pytest.mark.parametrize(
    ("rules", "previous", "preference", "expected"),
    [
        (None, "a", ["b", "c"], "b"),
        (TransitionRules({"a": ["c"]}), "a", ["b", "c"], "c"),
        (TransitionRules({"a": []}), "a", ["b", "c"], None),
        (TransitionRules({"a": []}), None, ["b"], "b"),
        (None, None, [], None),
    ],
)
def test_first_permitted(
    rules: TransitionRules | None, previous: str | None, preference: list[str], expected: str | None
) -> None:
    assert first_permitted(rules, previous, preference) == expected


def test_activity_messages() -> None:
    events = [E("a"), E("user", "1"), E("a"), E("m", "x", kind="pick"), E("user", "2"), E("b")]
    assert activity_messages(["a", "b"], events) == [E("user", "2"), E("b")]
    assert activity_messages(["a", "b"], events[:1]) == [E("a")]
