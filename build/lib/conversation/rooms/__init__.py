"""Conversation rooms (docs/design.md, "Rooms, activities and mentions"): a roster of agents shares one chat, taking turns in a
deterministic, bounded, restart-safe order.

The planner names the next speaker from an immutable ``(roster, transcript)`` snapshot; the room
appends the reply and asks again. ``None`` means the current activity is settled and the room waits
for the next human message. Replaying a stored transcript gives the identical next speaker.

This module is the public face of durable rooms (``Room``, ``RoomConfig``, ``Turn``) and of the
room planning names, which live in :mod:`conversation.planning`:

- :mod:`conversation.planning.events`: :class:`RoomEvent` and activities;
- :mod:`conversation.planning.mentions`: :func:`extract_mentions`;
- :mod:`conversation.planning.planner`: :class:`RoomTurnPlannerProtocol`,
  :class:`RoundRobinRoomPlanner` (the seed's rules, to the letter), :func:`plan_turn`;
- :mod:`conversation.planning.policies`, :mod:`conversation.planning.coordinator`: every other turn policy and
  :func:`planner_from_dict`;
- :mod:`conversation.planning.transitions`: allowed / disallowed speaker transitions.
"""

from __future__ import annotations

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
from conversation.planning.registry import PLANNER_KINDS, planner_from_dict
from conversation.planning.transitions import TransitionRules
from conversation.rooms.config import AgentSpec, RoomConfig
from conversation.rooms.room import Room, run_rooms
from conversation.rooms.transfer import ImportRejected, ResumeWarning
from conversation.rooms.turn import Turn

__all__ = [
    "AgentSpec",
    "ImportRejected",
    "ResumeWarning",
    "Room",
    "RoomConfig",
    "Turn",
    "run_rooms",
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
]
