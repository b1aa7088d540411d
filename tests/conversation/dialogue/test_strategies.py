"""Conversation-API strategy classes: adapters over the policies, legacy state, serialization, resume."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conversation.dialogue.strategies import (
    FocalSpeakerStrategy,
    RandomInclusiveStrategy,
    RandomSpeakerStrategy,
    RoundRobinStrategy,
    SpeakerStrategy,
)
from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent
from conversation.planning.policies import (
    FocalSpeakerPolicy,
    RandomInclusivePolicy,
    RandomPolicy,
    RoundRobinPolicy,
)
from conversation.rooms import RoomTurnPlannerProtocol


def agent(name: str) -> SimpleNamespace:
    """Stands in for an EDSL Agent: an object with a ``name``."""
    return SimpleNamespace(name=name)


AGENTS = [agent("Alice"), agent("Bob"), agent("Carol")]
NAMES = ["Alice", "Bob", "Carol"]


def make_all() -> list[SpeakerStrategy]:
    return [
        RoundRobinStrategy(),
        FocalSpeakerStrategy(focal_speaker_index=1),
        RandomSpeakerStrategy(seed=42),
        RandomInclusiveStrategy(seed=42),
    ]


@pytest.mark.parametrize(
    ("strategy", "policy"),
    [
        (RoundRobinStrategy(), RoundRobinPolicy()),
        (FocalSpeakerStrategy(2), FocalSpeakerPolicy(2)),
        (RandomSpeakerStrategy(seed=5), RandomPolicy(seed=5)),
        (RandomInclusiveStrategy(seed=5), RandomInclusivePolicy(seed=5)),
    ],
)
def test_each_strategy_adapts_one_policy(strategy: SpeakerStrategy, policy: object) -> None:
    assert strategy.policy == policy
    # Legacy and planner APIs agree turn after turn: one implementation, not two.
    transcript: list[RoomEvent] = []
    for _ in range(12):
        chosen = strategy.next_speaker(AGENTS)
        assert chosen in AGENTS
        assert chosen.name == policy.plan_next(NAMES, transcript)  # type: ignore[attr-defined]
        assert strategy.plan_next(NAMES, transcript) == chosen.name
        transcript.append(RoomEvent(chosen.name, "..."))
    assert strategy.speakers_so_far == [AGENTS[NAMES.index(e.speaker)] for e in transcript]
    assert isinstance(strategy, RoomTurnPlannerProtocol)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (RoundRobinStrategy(), ["a", "b", "c", "a", "b"]),
        (FocalSpeakerStrategy(), ["a", "b", "a", "c", "a"]),
        (FocalSpeakerStrategy(None), ["a", "b", "a", "c", "a"]),
        (FocalSpeakerStrategy(2), ["c", "a", "c", "b", "c"]),
    ],
)
def test_plain_strings_work(strategy: SpeakerStrategy, expected: list[str]) -> None:
    assert [strategy.next_speaker(["a", "b", "c"]) for _ in expected] == expected


@pytest.mark.parametrize("strategy", make_all(), ids=lambda s: type(s).__name__)
def test_one_agent(strategy: SpeakerStrategy) -> None:
    if isinstance(strategy, FocalSpeakerStrategy):
        strategy = FocalSpeakerStrategy(0)
    solo = [agent("Solo")]
    assert [strategy.next_speaker(solo) for _ in range(4)] == solo * 4
    assert strategy.plan_next(["Solo"], [RoomEvent("Solo")]) == "Solo"


@pytest.mark.parametrize("strategy", make_all(), ids=lambda s: type(s).__name__)
def test_empty_agent_list(strategy: SpeakerStrategy) -> None:
    with pytest.raises(ConversationValueError, match="at least one agent"):
        strategy.next_speaker([])


def test_focal_index_validated_against_the_agent_list() -> None:
    with pytest.raises(ConversationValueError, match="focal_speaker_index=5"):
        FocalSpeakerStrategy(5).next_speaker(AGENTS)
    with pytest.raises(ConversationValueError, match="focal_speaker_index"):
        FocalSpeakerStrategy(-1)


def test_reset_forgets_or_resumes() -> None:
    strategy = RoundRobinStrategy()
    for _ in range(2):
        strategy.next_speaker(AGENTS)
    strategy.reset()
    assert strategy.speakers_so_far == []
    assert strategy.next_speaker(AGENTS) is AGENTS[0]
    strategy.reset([AGENTS[0], AGENTS[1]])  # resume after a history of agents ...
    assert strategy.next_speaker(AGENTS) is AGENTS[2]
    strategy.reset(["Carol"])  # ... or of names
    assert strategy.next_speaker(AGENTS) is AGENTS[0]


@pytest.mark.parametrize("strategy_class", [RandomSpeakerStrategy, RandomInclusiveStrategy])
@settings(max_examples=40)
@given(seed=st.integers(0, 2**40), k=st.integers(0, 20))
def test_restored_after_k_turns_continues_exactly(
    strategy_class: type[SpeakerStrategy], seed: int, k: int
) -> None:
    uninterrupted = strategy_class(seed=seed)  # type: ignore[call-arg]
    expected = [uninterrupted.next_speaker(AGENTS).name for _ in range(k + 10)]

    first = strategy_class(seed=seed)  # type: ignore[call-arg]
    for _ in range(k):
        first.next_speaker(AGENTS)
    restored = SpeakerStrategy.from_dict(first.to_dict())  # through a dict, as from storage
    resumed = [restored.next_speaker(AGENTS).name for _ in range(10)]
    assert resumed == expected[k:]

    by_reset = strategy_class(seed=seed)  # type: ignore[call-arg]
    by_reset.reset(expected[:k])
    assert [by_reset.next_speaker(AGENTS).name for _ in range(10)] == expected[k:]


def test_negative_control_another_seed_continues_differently() -> None:
    base = RandomSpeakerStrategy(seed=1)
    expected = [base.next_speaker(AGENTS).name for _ in range(20)]
    other = RandomSpeakerStrategy(seed=2)
    other.reset(expected[:5])
    assert [other.next_speaker(AGENTS).name for _ in range(15)] != expected[5:]


@pytest.mark.parametrize("strategy", make_all(), ids=lambda s: type(s).__name__)
def test_round_trip(strategy: SpeakerStrategy) -> None:
    strategy.next_speaker(AGENTS)
    data = strategy.to_dict()
    restored = SpeakerStrategy.from_dict(data)
    assert type(restored) is type(strategy)
    assert restored.to_dict() == data
    assert restored.policy == strategy.policy
    assert data["speakers_so_far"] == [strategy.speakers_so_far[0].name]


def test_dict_shapes() -> None:
    assert RandomSpeakerStrategy(seed=9).to_dict() == {
        "strategy_name": "random",
        "seed": 9,
        "speakers_so_far": [],
    }
    assert FocalSpeakerStrategy(1).to_dict()["focal_speaker_index"] == 1
    unseeded = RandomInclusiveStrategy()
    assert isinstance(unseeded.seed, int)
    assert SpeakerStrategy.from_dict(unseeded.to_dict()).seed == unseeded.seed  # type: ignore[attr-defined]
    legacy = SpeakerStrategy.from_dict({"strategy_name": "random_no_repeat", "seed": 3})
    assert isinstance(legacy, RandomSpeakerStrategy) and legacy.seed == 3


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"strategy_name": "chaos"}, "unknown speaker strategy 'chaos'"),
        ({}, "unknown speaker strategy None"),
        ({"strategy_name": "random", "seed": 1, "temperature": 2}, "temperature"),
        ({"strategy_name": "round_robin", "seed": 1}, "seed"),
        ({"strategy_name": "random", "seed": 1.5}, "seed"),
        ({"strategy_name": "round_robin", "speakers_so_far": [1]}, "speakers_so_far"),
        ("round_robin", "mapping"),
    ],
)
def test_from_dict_rejects(data: object, message: str) -> None:
    with pytest.raises(ConversationValueError, match=message):
        SpeakerStrategy.from_dict(data)  # type: ignore[arg-type]


def test_unnamed_agents_use_positions_but_cannot_be_serialized() -> None:
    unnamed = [SimpleNamespace(name=None), SimpleNamespace(name=None)]
    strategy = RoundRobinStrategy()
    assert [strategy.next_speaker(unnamed) for _ in range(3)] == [
        unnamed[0],
        unnamed[1],
        unnamed[0],
    ]
    with pytest.raises(ConversationValueError, match="without a name"):
        strategy.to_dict()


def test_duplicate_agent_names_rejected() -> None:
    with pytest.raises(ConversationValueError, match="appears twice"):
        RoundRobinStrategy().next_speaker([agent("A"), agent("A")])


def test_repr_shows_settings() -> None:
    assert repr(RandomSpeakerStrategy(seed=4)) == "RandomSpeakerStrategy(seed=4)"
    assert repr(RoundRobinStrategy()) == "RoundRobinStrategy()"


def test_with_real_edsl_agents() -> None:
    from edsl import Agent

    agents = [Agent(name="Alice", traits={"x": 1}), Agent(name="Bob", traits={"x": 2})]
    strategy = RandomSpeakerStrategy(seed=1)
    chosen = [strategy.next_speaker(agents) for _ in range(4)]
    assert all(a in agents for a in chosen)
    assert not hasattr(agents[0], "model") or agents[0].__dict__.get("model") is None
    assert SpeakerStrategy.from_dict(strategy.to_dict()).speakers_so_far == [a.name for a in chosen]
