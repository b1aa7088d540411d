"""A room's configuration (docs/architecture.md, "rooms/config/"):

- ``settings``: every setting of a room declared once (``RoomConfigBase``), and what is derived
  from it: ``Room.create``'s keywords (``RoomSettings``), the editable list, the forms' defaults,
  the stored document's shape;
- ``room_config``: ``RoomConfig``, the settings with the room's behaviour (validated, storable);
- ``agents``: the roster's ``AgentSpec``; ``names``: the name rule and a room's placement;
- ``rules``: a planner, stop rule, context policy, breakpoints and prompt template as data;
- ``frozen``: the read-only JSON of a config shared by its readers.
"""

from conversation.rooms.config.agents import AgentSpec, roster_specs
from conversation.rooms.config.names import (
    NAME_PATTERN,
    RESERVED_SPEAKERS,
    check_name,
    check_placement,
    reserved_speaker,
)
from conversation.rooms.config.room_config import RoomConfig
from conversation.rooms.config.rules import (
    BREAKPOINT_KINDS,
    ROOM_PROMPT_VARIABLES,
    checked_breakpoints,
    planner_to_dict,
)
from conversation.rooms.config.settings import (
    EDITABLE,
    REQUEST_SETTINGS,
    RetrySettings,
    RoomSettings,
    request_settings,
    retry_settings,
    setting_default,
)

__all__ = [
    "BREAKPOINT_KINDS",
    "EDITABLE",
    "NAME_PATTERN",
    "REQUEST_SETTINGS",
    "RESERVED_SPEAKERS",
    "ROOM_PROMPT_VARIABLES",
    "AgentSpec",
    "RetrySettings",
    "RoomConfig",
    "RoomSettings",
    "check_name",
    "check_placement",
    "checked_breakpoints",
    "planner_to_dict",
    "request_settings",
    "reserved_speaker",
    "retry_settings",
    "roster_specs",
    "setting_default",
]
