"""The four conversation-API generator functions (and speaker_closure), delegating to the policies."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conversation.dialogue.generators import (
    default_turn_taking_generator,
    random_inclusive_generator,
    random_turn_taking_generator,
    speaker_closure,
    turn_taking_generator_with_focal_speaker,
)
from conversation.dialogue.strategies import RandomInclusiveStrategy, RandomSpeakerStrategy
from conversation.exceptions import ConversationValueError

ABC = ["a", "b", "c"]
GENERATORS = [
    default_turn_taking_generator,
    turn_taking_generator_with_focal_speaker,
    random_turn_taking_generator,
    random_inclusive_generator,
]


def drive(generator: object, agents: list, turns: int, **kwargs: object) -> list:
    history: list = []
    for _ in range(turns):
        history.append(generator(agent_list=agents, speakers_so_far=history, **kwargs))  # type: ignore[operator]
    return history


@pytest.mark.parametrize(
    ("generator", "kwargs", "expected"),
    [
        (default_turn_taking_generator, {}, ["a", "b", "c", "a", "b"]),
        (default_turn_taking_generator, {"focal_speaker_index": None}, ["a", "b", "c", "a", "b"]),
        (
            turn_taking_generator_with_focal_speaker,
            {"focal_speaker_index": 0},
            ["a", "b", "a", "c", "a"],
        ),
        (
            turn_taking_generator_with_focal_speaker,
            {"focal_speaker_index": 2},
            ["c", "a", "c", "b", "c"],
        ),
        # Conversation passes focal_speaker_index=None: it must mean 0, not crash.
        (
            turn_taking_generator_with_focal_speaker,
            {"focal_speaker_index": None},
            ["a", "b", "a", "c", "a"],
        ),
        (turn_taking_generator_with_focal_speaker, {}, ["a", "b", "a", "c", "a"]),
    ],
)
def test_deterministic_generators(generator: object, kwargs: dict, expected: list[str]) -> None:
    assert drive(generator, ABC, len(expected), **kwargs) == expected


def test_positional_call_like_seed_000() -> None:
    assert default_turn_taking_generator(ABC, ["a"]) == "b"
    assert turn_taking_generator_with_focal_speaker(ABC, ["a"], 0) == "b"


@pytest.mark.parametrize("generator", GENERATORS, ids=lambda g: g.__name__)
def test_returns_elements_of_agent_list_and_supports_one_agent(generator: object) -> None:
    agents = [SimpleNamespace(name="Alice"), SimpleNamespace(name="Bob")]
    for chosen in drive(generator, agents, 6):
        assert any(chosen is a for a in agents)
    solo = [SimpleNamespace(name="Solo")]
    assert drive(generator, solo, 3) == solo * 3


@pytest.mark.parametrize("generator", GENERATORS, ids=lambda g: g.__name__)
def test_empty_list_rejected(generator: object) -> None:
    with pytest.raises(ConversationValueError, match="at least one agent"):
        generator(agent_list=[], speakers_so_far=[])  # type: ignore[operator]


def test_focal_index_out_of_range() -> None:
    with pytest.raises(ConversationValueError, match="focal_speaker_index"):
        turn_taking_generator_with_focal_speaker(ABC, [], focal_speaker_index=7)


@pytest.mark.parametrize(
    ("generator", "strategy_class"),
    [
        (random_turn_taking_generator, RandomSpeakerStrategy),
        (random_inclusive_generator, RandomInclusiveStrategy),
    ],
)
def test_seeded_generators_match_the_strategies(generator: object, strategy_class: type) -> None:
    strategy = strategy_class(seed=99)
    expected = [strategy.next_speaker(ABC) for _ in range(15)]
    assert drive(generator, ABC, 15, seed=99) == expected


@pytest.mark.parametrize("generator", [random_turn_taking_generator, random_inclusive_generator])
def test_unseeded_generators_leave_global_random_alone(generator: object) -> None:
    random.seed(5)
    state = random.getstate()
    drive(generator, ABC, 20)
    assert random.getstate() == state
    # With an rng of their own, the draws are reproducible.
    assert drive(generator, ABC, 12, rng=random.Random(3)) == drive(
        generator, ABC, 12, rng=random.Random(3)
    )


@pytest.mark.parametrize("generator", [random_turn_taking_generator, random_inclusive_generator])
def test_rng_and_seed_are_exclusive_and_checked(generator: object) -> None:
    with pytest.raises(ConversationValueError, match="not both"):
        generator(ABC, [], rng=random.Random(1), seed=1)  # type: ignore[operator]
    with pytest.raises(ConversationValueError, match="rng"):
        generator(ABC, [], rng="not an rng")  # type: ignore[operator]


@settings(max_examples=50)
@given(st.integers(2, 5), st.integers(1, 30))
def test_random_generators_keep_their_promises(size: int, turns: int) -> None:
    roster = [f"x{i}" for i in range(size)]
    plain = drive(random_turn_taking_generator, roster, turns)
    assert all(p != q for p, q in zip(plain, plain[1:], strict=False))
    inclusive = drive(random_inclusive_generator, roster, turns)
    for start in range(0, turns, size):
        block = inclusive[start : start + size]
        assert len(block) == len(set(block))


def test_speaker_closure() -> None:
    next_speaker = speaker_closure(ABC, turn_taking_generator_with_focal_speaker, 1)
    assert [next_speaker() for _ in range(4)] == ["b", "a", "b", "c"]
    with pytest.raises(ConversationValueError):
        speaker_closure(ABC, "not callable")  # type: ignore[arg-type]
