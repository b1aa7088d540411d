"""The room templates the app ships: the seed's car buying, the mug negotiation, and a
planner / coder / reviewer room.

A template is data (agents, planner and termination as their ``to_dict`` forms, an opening message),
so the Home, Room and Experiments pages can show it, vary it and turn it into rooms. No Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conversation.library import AgentDraft


@dataclass(frozen=True, slots=True)
class RoomTemplate:
    """A ready-made room: who is in it, how turns are taken, when it stops, how it opens."""

    key: str
    title: str
    description: str
    agents: tuple[AgentDraft, ...]
    planner: Mapping[str, Any]
    termination: Mapping[str, Any] | None
    opening: str
    moderated: bool = False
    # Settings for the offline stand-in model when no provider key is configured (e.g. the mug
    # negotiation tells it to say DEAL when it accepts a price).
    offline_parameters: Mapping[str, Any] = field(default_factory=dict)
    # Suggested experiment conditions: {condition label: {agent name: {trait: value}}}.
    conditions: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)

    @property
    def roster(self) -> list[str]:
        return [a.name for a in self.agents]

    def agent_dicts(self) -> list[dict[str, Any]]:
        return [a.to_dict() for a in self.agents]


CAR_BUYING = RoomTemplate(
    key="car_buying",
    title="Car buying",
    description=(
        "A first-time buyer, a salesman on commission and the buyer's skeptical brother-in-law "
        "at a dealership. Turns go round robin; the room stops after 9 turns."
    ),
    agents=(
        AgentDraft(
            "Buyer",
            {
                "role": "first-time car buyer",
                "budget": "$25,000",
                "goal": "buy a reliable used sedan without overpaying",
            },
        ),
        AgentDraft(
            "Salesman",
            {
                "role": "car salesman on commission",
                "goal": "sell the 2021 sedan on the lot, listed at $27,500",
            },
        ),
        AgentDraft(
            "Brother_in_law",
            {
                "role": "the buyer's skeptical brother-in-law",
                "goal": "make sure nobody gets ripped off; question every claim",
            },
        ),
    ),
    planner={"kind": "round_robin", "transitions": None},
    termination={"kind": "max_turns", "max_turns": 9},
    opening="You are at the dealership, looking at the 2021 sedan listed at $27,500. Go ahead.",
    conditions={
        "budget $18,000": {"Buyer": {"budget": "$18,000"}},
        "budget $25,000": {"Buyer": {"budget": "$25,000"}},
        "budget $32,000": {"Buyer": {"budget": "$32,000"}},
    },
)

MUG_NEGOTIATION = RoomTemplate(
    key="mug_negotiation",
    title="Mug negotiation",
    description=(
        "Bilateral bargaining over a coffee mug: each side knows only its own value or cost. "
        "The room stops when someone says DEAL, or after 8 turns."
    ),
    agents=(
        AgentDraft(
            "Buyer",
            {
                "role": "buyer of a coffee mug",
                "private_value": "the mug is worth $10 to you; never reveal this",
                "rule": "say DEAL when you accept a price",
            },
        ),
        AgentDraft(
            "Seller",
            {
                "role": "seller of a coffee mug",
                "private_cost": "the mug cost you $4; never reveal this",
                "rule": "say DEAL when you accept a price",
            },
        ),
    ),
    planner={"kind": "round_robin", "transitions": None},
    termination={
        "kind": "any",
        "parts": [
            {"kind": "text_mention", "text": "DEAL"},
            {"kind": "max_turns", "max_turns": 8},
        ],
    },
    opening="The seller asks $8 for the mug. Buyer, what do you say?",
    offline_parameters={"deal_phrase": "DEAL"},
    conditions={
        "value $10, cost $4": {
            "Buyer": {"private_value": "the mug is worth $10 to you; never reveal this"},
            "Seller": {"private_cost": "the mug cost you $4; never reveal this"},
        },
        "value $8, cost $7": {
            "Buyer": {"private_value": "the mug is worth $8 to you; never reveal this"},
            "Seller": {"private_cost": "the mug cost you $7; never reveal this"},
        },
        "value $6, cost $9": {
            "Buyer": {"private_value": "the mug is worth $6 to you; never reveal this"},
            "Seller": {"private_cost": "the mug cost you $9; never reveal this"},
        },
    },
)

PLANNER_CODER_REVIEWER = RoomTemplate(
    key="planner_coder_reviewer",
    title="Planner, coder, reviewer",
    description=(
        "A small software team: after your request everyone speaks once in roster "
        "order; later rounds admit only the agents someone @-mentioned. At most 3 rounds and 20 "
        "messages per activity."
    ),
    agents=(
        AgentDraft(
            "planner",
            {"role": "tech lead who breaks work into steps"},
            "Split the request into small steps and hand each to @coder or @reviewer.",
        ),
        AgentDraft(
            "coder",
            {"role": "pragmatic Python developer"},
            "Write the code for the current step; ask @reviewer to check it.",
        ),
        AgentDraft(
            "reviewer",
            {"role": "careful code reviewer"},
            "Review what the coder wrote; mention @coder when something must change.",
        ),
    ),
    planner={"kind": "round_robin_room", "max_rounds": 3, "max_messages": 20, "transitions": None},
    termination=None,
    opening="Build a login form.",
    moderated=False,
)

TEMPLATES: dict[str, RoomTemplate] = {
    t.key: t for t in (CAR_BUYING, MUG_NEGOTIATION, PLANNER_CODER_REVIEWER)
}

__all__ = ["CAR_BUYING", "MUG_NEGOTIATION", "PLANNER_CODER_REVIEWER", "RoomTemplate", "TEMPLATES"]
