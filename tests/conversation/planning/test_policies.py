"""Turn policies: round robin, focal, seeded random, random-inclusive, addressed, free; transition
rules on every fallback path; planner_from_dict."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent
from conversation.planning.planner import (
    PlannedTurn,
    RoomTurnPlannerProtocol,
    RoundRobinRoomPlanner,
)
from conversation.planning.policies import (
    AddressedPolicy,
    CoordinatorPolicy,
    FocalSpeakerPolicy,
    FreePolicy,
    RandomInclusivePolicy,
    RandomPolicy,
    RoundRobinPolicy,
)
from conversation.planning.registry import PLANNER_KINDS, planner_from_dict
from conversation.planning.transitions import TransitionRules

E = RoomEvent
ABC = ["a", "b", "c"]


def run(
    policy: object, roster: list[str], turns: int, start: list[RoomEvent] | None = None
) -> list[str]:
    """Let the policy pick ``turns`` speakers, appending a message for each."""
    transcript = list(start or [])
    spoken = []
    for _ in range(turns):
        name = policy.plan_next(roster, transcript)  # type: ignore[attr-defined]
        assert name is not None
        spoken.append(name)
        transcript.append(E(name, "..."))
    return spoken


# -- round robin -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transcript", "expected"),
    [
        ([], "a"),
        ([E("a")], "b"),
        ([E("a"), E("b"), E("c")], "a"),
        ([E("b")], "c"),  # continues after the last speaker, whoever began
        ([E("a", passed=True)], "b"),  # a pass is a turn
        ([E("user", "hi")], "a"),  # a human message is not a turn
        ([E("a"), E("user", "hi")], "b"),  # ... and does not restart the order
        ([E("a"), E("m", "c", kind="pick"), E("s", "x", kind="system")], "b"),
        ([E("a"), E("zed")], "b"),  # non-roster speakers are people
    ],
)
def test_round_robin_table(transcript: list[RoomEvent], expected: str) -> None:
    assert RoundRobinPolicy().plan_next(ABC, transcript) == expected


def test_round_robin_cycles_and_one_agent() -> None:
    assert run(RoundRobinPolicy(), ABC, 7) == ["a", "b", "c", "a", "b", "c", "a"]
    assert run(RoundRobinPolicy(), ["solo"], 3) == ["solo"] * 3


# -- focal -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "roster", "expected"),
    [
        (
            FocalSpeakerPolicy(0),
            ["auctioneer", "x", "y"],
            ["auctioneer", "x", "auctioneer", "y", "auctioneer", "x"],
        ),
        (FocalSpeakerPolicy(1), ABC, ["b", "a", "b", "c", "b", "a"]),
        (FocalSpeakerPolicy(2), ABC, ["c", "a", "c", "b", "c", "a"]),
        (FocalSpeakerPolicy(None), ABC, ["a", "b", "a", "c", "a", "b"]),  # None means 0
        (FocalSpeakerPolicy(focal_speaker="c"), ABC, ["c", "a", "c", "b", "c", "a"]),
        (FocalSpeakerPolicy(0), ["solo"], ["solo", "solo", "solo"]),
        (FocalSpeakerPolicy(0), ["f", "o"], ["f", "o", "f", "o"]),
    ],
)
def test_focal_table(policy: FocalSpeakerPolicy, roster: list[str], expected: list[str]) -> None:
    assert run(policy, roster, len(expected)) == expected


def test_focal_after_a_non_focal_history() -> None:
    # Resumed mid-way: the last speaker was not focal, so the focal agent speaks.
    assert FocalSpeakerPolicy(0).plan_next(ABC, [E("c")]) == "a"
    # After focal, the rotation continues after the last non-focal speaker.
    assert FocalSpeakerPolicy(0).plan_next(ABC, [E("a"), E("c"), E("a")]) == "b"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"focal_speaker_index": -1}, "focal_speaker_index"),
        ({"focal_speaker_index": True}, "focal_speaker_index"),
        ({"focal_speaker_index": "0"}, "focal_speaker_index"),
        ({"focal_speaker": ""}, "focal_speaker"),
    ],
)
def test_focal_bad_configuration(kwargs: dict, message: str) -> None:
    with pytest.raises(ConversationValueError, match=message):
        FocalSpeakerPolicy(**kwargs)


def test_focal_index_checked_against_the_roster_when_used() -> None:
    policy = FocalSpeakerPolicy(3)  # fine until used with fewer agents
    assert policy.plan_next(["a", "b", "c", "d"], []) == "d"
    with pytest.raises(ConversationValueError, match=r"focal_speaker_index=3 .*0\.\.2"):
        policy.plan_next(ABC, [])
    with pytest.raises(ConversationValueError, match="'z'"):
        FocalSpeakerPolicy(focal_speaker="z").plan_next(ABC, [])


# -- seeded random ---------------------------------------------------------------------------


@pytest.mark.parametrize("policy_class", [RandomPolicy, RandomInclusivePolicy])
def test_seeded_random_is_reproducible_and_leaves_global_random_alone(policy_class: type) -> None:
    random.seed(1234)
    before = random.getstate()
    first = run(policy_class(seed=7), ABC, 30)
    assert random.getstate() == before  # no global RNG use
    assert run(policy_class(seed=7), ABC, 30) == first
    assert run(policy_class(seed="7"), ABC, 30) == first  # "7:n" either way
    assert any(run(policy_class(seed=s), ABC, 30) != first for s in range(8, 12))
    assert set(first) == set(ABC)  # negative control: not stuck on one agent


@pytest.mark.parametrize("policy_class", [RandomPolicy, RandomInclusivePolicy])
def test_seed_none_picks_and_keeps_a_concrete_seed(policy_class: type) -> None:
    policy = policy_class()
    assert isinstance(policy.seed, int)
    restored = planner_from_dict(policy.to_dict())
    assert restored == policy
    assert run(restored, ABC, 12) == run(policy, ABC, 12)
    assert len({policy_class().seed for _ in range(5)}) > 1


@pytest.mark.parametrize("policy_class", [RandomPolicy, RandomInclusivePolicy])
@pytest.mark.parametrize("seed", [None, 1.5, True, [1]])
def test_bad_seed(policy_class: type, seed: object) -> None:
    if seed is None:
        return  # None is valid: a fresh seed
    with pytest.raises(ConversationValueError, match="seed"):
        policy_class(seed=seed)


@pytest.mark.parametrize("policy_class", [RandomPolicy, RandomInclusivePolicy])
def test_random_with_one_agent(policy_class: type) -> None:
    assert run(policy_class(seed=1), ["solo"], 4) == ["solo"] * 4


@settings(max_examples=60)
@given(st.integers(0, 10**9), st.integers(2, 5), st.integers(1, 40))
def test_random_never_repeats_immediately(seed: int, size: int, turns: int) -> None:
    roster = [f"agent{i}" for i in range(size)]
    spoken = run(RandomPolicy(seed=seed), roster, turns)
    assert all(x != y for x, y in zip(spoken, spoken[1:], strict=False))


@settings(max_examples=60)
@given(st.integers(0, 10**9), st.integers(1, 5), st.integers(1, 40))
def test_random_inclusive_cycles_through_everyone(seed: int, size: int, turns: int) -> None:
    roster = [f"agent{i}" for i in range(size)]
    spoken = run(RandomInclusivePolicy(seed=seed), roster, turns)
    for start in range(0, turns, size):
        block = spoken[start : start + size]
        assert len(block) == len(set(block))  # no one twice before everyone once
    if size > 1:
        assert all(x != y for x, y in zip(spoken, spoken[1:], strict=False))


def test_negative_control_plain_random_does_repeat_within_a_cycle() -> None:
    # The cycle property is specific to random-inclusive: plain random breaks it for some seed.
    roster = ["a", "b", "c", "d"]

    def breaks(seed: int) -> bool:
        spoken = run(RandomPolicy(seed=seed), roster, 8)
        return any(len(set(spoken[i : i + 4])) < 4 for i in (0, 4))

    assert any(breaks(seed) for seed in range(20))


def test_random_draw_depends_on_turn_index_not_on_humans() -> None:
    policy = RandomPolicy(seed=3)
    base = [E("a"), E("b")]
    with_human = [E("a"), E("user", "hello"), E("b")]
    assert policy.plan_next(ABC, base) == policy.plan_next(ABC, with_human)


def test_random_picks_are_spread() -> None:
    counts = Counter(run(RandomPolicy(seed=5), ABC, 300))
    assert min(counts.values()) > 60  # roughly uniform, never starved


# -- addressed -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transcript", "expected"),
    [
        ([], None),
        ([E("user", "hello all")], None),  # no one addressed
        ([E("user", "@b what do you think?")], "b"),
        ([E("user", "@c @a")], "a"),  # roster order within one message
        ([E("user", "@b"), E("b", "fine")], None),
        ([E("user", "@a @b"), E("a", "ok")], "b"),  # earlier addressees keep their place
        ([E("user", "@a @b"), E("a", "@c check")], "b"),
        ([E("user", "@a @b"), E("a", "@c check"), E("b")], "c"),
        ([E("user", "@a"), E("a", "@a me again")], None),  # self-mention ignored
        ([E("user", "@a @b"), E("a", passed=True)], "b"),  # a pass answers
        ([E("user", "@a"), E("a", passed=True)], None),
        ([E("user", "@a"), E("user", "@b instead")], "b"),  # a new activity drops the queue
        ([E("a", "@b")], "b"),  # no human message: the whole transcript is the activity
        ([E("user", "@a"), E("m", "@b", kind="system")], "a"),  # only messages invite
        ([E("user", "@zed @b")], "b"),
        ([E("user", "mail x@a.com")], None),
    ],
)
def test_addressed_table(transcript: list[RoomEvent], expected: str | None) -> None:
    assert AddressedPolicy().plan_next(ABC, transcript) == expected


def test_addressed_cap_counts_the_activity() -> None:
    policy = AddressedPolicy(max_messages=3)
    ping_pong = [E("user", "@a"), E("a", "@b"), E("b", "@a")]
    assert policy.plan_next(ABC, ping_pong) is None
    assert AddressedPolicy().plan_next(ABC, ping_pong) == "a"
    assert AddressedPolicy(max_messages=None).plan_next(ABC, ping_pong * 30) == "a"


# -- free ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transcript", "expected"),
    [
        ([], None),
        ([E("user", "go")], "a"),
        ([E("user"), E("a")], "b"),
        ([E("user"), E("a"), E("b"), E("c")], "a"),  # each message invites the others
        ([E("user"), E("a", passed=True), E("b", passed=True), E("c", passed=True)], None),
        ([E("user"), E("a"), E("b", passed=True), E("c", passed=True)], None),
        ([E("user"), E("b")], "a"),  # b answered out of turn; a still waits
        ([E("a", "hi")], "b"),  # no human message
    ],
)
def test_free_table(transcript: list[RoomEvent], expected: str | None) -> None:
    assert FreePolicy().plan_next(ABC, transcript) == expected


def test_free_cap() -> None:
    assert run(FreePolicy(max_messages=4), ABC, 3, [E("user")]) == ["a", "b", "c"]
    assert FreePolicy(max_messages=4).plan_next(ABC, [E("user"), E("a"), E("b"), E("c")]) is None


@pytest.mark.parametrize("policy_class", [AddressedPolicy, FreePolicy, CoordinatorPolicy])
@pytest.mark.parametrize("cap", [0, -1, 2.5, True])
def test_bad_caps(policy_class: type, cap: object) -> None:
    with pytest.raises(ConversationValueError, match="max_messages"):
        policy_class(max_messages=cap)


# -- every policy ----------------------------------------------------------------------------

ALL_POLICIES = [
    RoundRobinPolicy(),
    FocalSpeakerPolicy(0),
    FocalSpeakerPolicy(focal_speaker="b"),
    RandomPolicy(seed=11),
    RandomInclusivePolicy(seed=11),
    AddressedPolicy(),
    FreePolicy(),
    CoordinatorPolicy("a"),
    CoordinatorPolicy(picker=lambda eligible, transcript: eligible[-1]),
    RoundRobinRoomPlanner(),
]
SEED_000 = ALL_POLICIES[:5]

TRANSCRIPTS = st.lists(
    st.builds(
        E,
        speaker=st.sampled_from(["a", "b", "c", "user"]),
        content=st.lists(st.sampled_from(["@a", "@b", "@c", "ok"]), max_size=3).map(" ".join),
        passed=st.booleans(),
        kind=st.sampled_from(["message", "message", "message", "system"]),
    ),
    max_size=20,
)


def configured_for(policy: object, roster: list[str]) -> bool:
    """False when the policy names an agent missing from ``roster`` (a configuration error)."""
    if isinstance(policy, FocalSpeakerPolicy):
        return policy.focal_speaker in (None, *roster)
    if isinstance(policy, CoordinatorPolicy):
        return policy.coordinator in (None, *roster)
    return True


ROSTERS = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True)


@pytest.mark.parametrize("policy", ALL_POLICIES, ids=lambda p: type(p).__name__)
def test_is_a_planner(policy: object) -> None:
    assert isinstance(policy, RoomTurnPlannerProtocol)
    assert policy.plan_next([], [E("user")]) is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("policy", ALL_POLICIES, ids=lambda p: type(p).__name__)
@settings(max_examples=60)
@given(roster=ROSTERS, transcript=TRANSCRIPTS)
def test_pure_and_within_the_roster(policy: object, roster: list[str], transcript: list) -> None:
    if not configured_for(policy, roster):
        return
    first = policy.plan_next(roster, transcript)  # type: ignore[attr-defined]
    assert first == policy.plan_next(tuple(roster), tuple(transcript))  # type: ignore[attr-defined]
    assert first is None or first in roster
    turn = policy.plan_turn(roster, transcript)  # type: ignore[attr-defined]
    assert (turn is None and first is None) or (
        isinstance(turn, PlannedTurn) and turn.speaker == first
    )


@pytest.mark.parametrize("policy", SEED_000, ids=lambda p: type(p).__name__)
@settings(max_examples=60)
@given(roster=ROSTERS, data=st.data())
def test_seed_000_policies_work_without_humans_and_never_settle(
    policy: object, roster: list[str], data: st.DataObject
) -> None:
    if not configured_for(policy, roster):
        return
    history = data.draw(st.lists(st.sampled_from(roster), max_size=15))
    transcript = [E(name, "said something") for name in history]
    assert policy.plan_next(roster, transcript) in roster  # type: ignore[attr-defined]


RULES = st.dictionaries(
    st.sampled_from(["a", "b", "c", "user"]),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
    max_size=4,
).flatmap(
    lambda graph: st.builds(
        TransitionRules, st.just(graph), st.sampled_from(["allowed", "disallowed"])
    )
)


def with_rules(policy: object, rules: TransitionRules) -> object:
    data = policy.to_dict()  # type: ignore[attr-defined]
    data["transitions"] = rules.to_dict()
    return planner_from_dict(data)


SERIALIZABLE = [p for p in ALL_POLICIES if not (isinstance(p, CoordinatorPolicy) and p.picker)]


@pytest.mark.parametrize("policy", SERIALIZABLE, ids=lambda p: type(p).__name__)
@settings(max_examples=80)
@given(rules=RULES, transcript=TRANSCRIPTS)
def test_rules_hold_on_every_path(policy: object, rules: TransitionRules, transcript: list) -> None:
    roster = ["a", "b", "c"]
    ruled = with_rules(policy, rules)
    messages = [e for e in transcript if e.kind == "message"]
    previous = messages[-1].speaker if messages else None
    name = ruled.plan_next(roster, transcript)  # type: ignore[attr-defined]
    if name is not None and not isinstance(ruled, CoordinatorPolicy):
        assert rules.permits(previous, name)
    if isinstance(policy, tuple(type(p) for p in SEED_000)):
        # Liveness: the conversation-API policies name someone whenever anyone is permitted.
        assert (name is None) == (not rules.filter(previous, roster))


def test_negative_control_rules_change_the_choice() -> None:
    rules = TransitionRules({"a": ["c"]})
    assert RoundRobinPolicy().plan_next(ABC, [E("a")]) == "b"
    assert RoundRobinPolicy(transitions=rules).plan_next(ABC, [E("a")]) == "c"
    assert FocalSpeakerPolicy(1, transitions=rules).plan_next(ABC, [E("a")]) == "c"
    assert RoundRobinPolicy(transitions=TransitionRules({"a": []})).plan_next(ABC, [E("a")]) is None
    assert AddressedPolicy(transitions=rules).plan_next(ABC, [E("a", "@b @c")]) == "c"


def test_rules_naming_strangers_are_rejected_when_planning() -> None:
    with pytest.raises(ConversationValueError, match="not on the roster"):
        RoundRobinPolicy(transitions=TransitionRules({"a": ["zed"]})).plan_next(ABC, [])


@pytest.mark.parametrize("policy", SERIALIZABLE, ids=lambda p: type(p).__name__)
def test_serialization_round_trip(policy: object) -> None:
    data = policy.to_dict()  # type: ignore[attr-defined]
    assert data["kind"] in PLANNER_KINDS
    restored = planner_from_dict(data)
    assert restored == policy
    assert restored.to_dict() == data  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "telepathy"}, "unknown planner kind 'telepathy'"),
        ({}, "unknown planner kind None"),
        ({"kind": "random", "seed": 1, "colour": "red"}, "colour"),
        ({"kind": "focal", "focal_speaker_index": -2}, "focal_speaker_index"),
        ({"kind": "round_robin_room", "max_rounds": 0}, "max_rounds"),
        ("round_robin", "mapping"),
    ],
)
def test_planner_from_dict_rejects(data: object, message: str) -> None:
    with pytest.raises(ConversationValueError, match=message):
        planner_from_dict(data)  # type: ignore[arg-type]


def test_policies_are_frozen_and_hashable() -> None:
    policy = RandomPolicy(seed=1)
    with pytest.raises(AttributeError):
        policy.seed = 2  # type: ignore[misc]
    assert hash(policy) == hash(RandomPolicy(seed=1))
