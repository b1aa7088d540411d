"""One registry of turn-taking rules: every kind restores, says what it is called, which settings
a form may set (real fields of its class) and how many turns an activity can take."""

from __future__ import annotations

import dataclasses

import pytest

from conversation.exceptions import ConversationValueError
from conversation.planning.registry import (
    PLANNER_KINDS,
    planner_from_dict,
    planner_infos,
    planner_label,
    planner_turn_bound,
)
from conversation.termination.conditions import (
    MaxMessages,
    MaxTurns,
    TextMention,
    TokenBudget,
    describe_termination,
    termination_turn_bound,
)


@pytest.mark.parametrize("info", planner_infos(), ids=lambda i: i.kind)
def test_every_planner_has_a_label_and_real_settings(info) -> None:  # type: ignore[no-untyped-def]
    cls = PLANNER_KINDS[info.kind]
    assert info.label and info.label != info.kind
    names = {f.name for f in dataclasses.fields(cls)}
    assert set(info.settings) <= names, f"{info.kind}: {set(info.settings) - names}"


@pytest.mark.parametrize(
    ("data", "roster", "bound"),
    [
        ({"kind": "round_robin_room", "max_rounds": 2, "max_messages": 20}, 3, 6),
        ({"kind": "round_robin_room", "max_rounds": 5, "max_messages": 4}, 3, 3),
        ({"kind": "addressed", "max_messages": 11}, 2, 10),
        ({"kind": "free", "max_messages": 5}, 9, 4),
        ({"kind": "coordinator", "coordinator": "m", "max_messages": 8}, 3, 7),
        ({"kind": "round_robin"}, 3, None),
        ({"kind": "random", "seed": 1}, 3, None),
    ],
)
def test_planner_turn_bounds(data: dict, roster: int, bound: int | None) -> None:  # type: ignore[type-arg]
    assert planner_turn_bound(data, roster) == bound


def test_unknown_kinds_are_refused_when_restored_and_named_when_shown() -> None:
    with pytest.raises(ConversationValueError, match="unknown planner kind 'telepathy'"):
        planner_from_dict({"kind": "telepathy"})
    assert planner_label("telepathy") == "telepathy"
    assert planner_label("round_robin") == "Round robin"


def test_stop_rules_describe_themselves_and_bound_turns() -> None:
    either = (MaxTurns(12) | TextMention("DEAL")).to_dict()
    both = (MaxTurns(12) & MaxMessages(30)).to_dict()
    assert describe_termination(either) == "after 12 agent turns or when someone says 'DEAL'"
    assert termination_turn_bound(either) == 12
    assert termination_turn_bound(both) == 29
    assert termination_turn_bound((MaxTurns(3) & TextMention("x")).to_dict()) is None
    assert termination_turn_bound(TokenBudget(max_total_tokens=99).to_dict()) is None
    assert describe_termination(None).startswith("none")
    assert describe_termination({"kind": "from-the-future"}) == "from-the-future"
