"""Who speaks next: room events, @-mentions, the round-robin room planner, turn policies, the coordinator
and transition rules. Pure functions of ``(roster, transcript)``; restart = replay."""

from conversation.planning.coordinator import CoordinatorPolicy, InvalidPickError, parse_pick
from conversation.planning.events import (
    ROOM_EVENT_KINDS,
    RoomEvent,
    RoomEventKind,
    activity_start,
    agent_turns,
    current_activity,
    opener_index,
)
from conversation.planning.mentions import extract_mentions, mentioned_roster
from conversation.planning.planner import (
    PlannedTurn,
    RoomTurnPlannerProtocol,
    RoundRobinRoomPlanner,
    plan_turn,
)
from conversation.planning.policies import (
    AddressedPolicy,
    FocalSpeakerPolicy,
    FreePolicy,
    RandomInclusivePolicy,
    RandomPolicy,
    RoundRobinPolicy,
)
from conversation.planning.registry import (
    PLANNER_KINDS,
    planner_from_dict,
    planner_label,
    planner_turn_bound,
)
from conversation.planning.transitions import TransitionRules

__all__ = [
    "ROOM_EVENT_KINDS",
    "PLANNER_KINDS",
    "AddressedPolicy",
    "CoordinatorPolicy",
    "RoomEventKind",
    "FocalSpeakerPolicy",
    "FreePolicy",
    "InvalidPickError",
    "PlannedTurn",
    "RandomInclusivePolicy",
    "RandomPolicy",
    "RoomEvent",
    "RoomTurnPlannerProtocol",
    "RoundRobinPolicy",
    "RoundRobinRoomPlanner",
    "TransitionRules",
    "activity_start",
    "agent_turns",
    "current_activity",
    "extract_mentions",
    "mentioned_roster",
    "opener_index",
    "parse_pick",
    "plan_turn",
    "planner_from_dict",
    "planner_label",
    "planner_turn_bound",
]
