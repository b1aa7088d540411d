"""The one registry of turn-taking rules: every built-in planner by its ``kind``, with what it
says about itself (``label``, the ``settings`` a form may set, ``turn_bound``). Room configs,
the web app's forms and tables, and experiment estimates all read it here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.planning.coordinator import CoordinatorPolicy
from conversation.planning.planner import RoomTurnPlannerProtocol, RoundRobinRoomPlanner
from conversation.planning.policies import (
    AddressedPolicy,
    FocalSpeakerPolicy,
    FreePolicy,
    RandomInclusivePolicy,
    RandomPolicy,
    RoundRobinPolicy,
)

PLANNER_KINDS: dict[str, Any] = {
    cls.kind: cls
    for cls in (
        RoundRobinRoomPlanner,
        RoundRobinPolicy,
        FocalSpeakerPolicy,
        RandomPolicy,
        RandomInclusivePolicy,
        AddressedPolicy,
        FreePolicy,
        CoordinatorPolicy,
    )
}


@dataclass(frozen=True, slots=True)
class PlannerInfo:
    """What a planner kind is called and which settings it takes."""

    kind: str
    label: str
    settings: tuple[str, ...]


def planner_infos() -> list[PlannerInfo]:
    """Every built-in planner kind, in the order forms list them."""
    return [
        PlannerInfo(kind, cls.label, tuple(cls.settings)) for kind, cls in PLANNER_KINDS.items()
    ]


def planner_label(kind: Any) -> str:
    """The label of a planner kind (the kind itself when unknown, e.g. from a newer version)."""
    cls = PLANNER_KINDS.get(kind) if isinstance(kind, str) else None
    return cls.label if cls is not None else str(kind)


def planner_from_dict(data: Mapping[str, Any]) -> RoomTurnPlannerProtocol:
    """Restore any built-in planner from its ``to_dict()``; unknown kinds are rejected."""
    if not isinstance(data, Mapping):
        raise ConversationValueError(
            f"a planner dict must be a mapping with a 'kind', got {type(data).__name__}"
        )
    kind = data.get("kind")
    cls = PLANNER_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ConversationValueError(
            f"unknown planner kind {kind!r}; use one of {', '.join(sorted(PLANNER_KINDS))}"
        )
    planner: RoomTurnPlannerProtocol = cls.from_dict(data)
    return planner


def planner_turn_bound(data: Mapping[str, Any], roster_size: int) -> int | None:
    """At most how many agent turns one activity of a stored planner can take (None: unbounded)."""
    planner = planner_from_dict(data)
    bound = getattr(planner, "turn_bound", None)
    return bound(roster_size) if callable(bound) else None


__all__ = [
    "PLANNER_KINDS",
    "PlannerInfo",
    "planner_from_dict",
    "planner_infos",
    "planner_label",
    "planner_turn_bound",
]
