"""Per-agent breakpoints: pause a room before a chosen agent speaks, or after each of its turns.

One rule, read from the room's log at each plan (so ``Room.run``, the in-app runner and the worker
agree, and a breakpoint set or cleared with ``Room.update_config`` applies from the next turn):

- **after**: the latest message is a finished turn of an agent with an ``after`` breakpoint;
- **before**: the agent due to speak next has a ``before`` breakpoint;

and no breakpoint notice for that agent and kind was written since that latest message. The room
then goes ``paused`` with a system notice whose data is ``{"event": "paused", "by":
"breakpoint", "breakpoint": "before" | "after", "agent": name}``, before any model call.
``resume()`` releases it: the notice is in the log, so the same turn goes on (a later turn of
the agent pauses again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import storage
from conversation.rooms.config import RoomConfig
from conversation.vocabulary import EventKind, NoticeKind, TurnState, kind_of


@dataclass(frozen=True, slots=True)
class Pause:
    """A breakpoint that stops the room now: the room's reason and its notice's data."""

    reason: str
    data: dict[str, Any]


def _tail(rows: Sequence[storage.Event]) -> tuple[storage.Event | None, list[dict[str, Any]]]:
    """The latest message (a person's, or a finished agent turn) and the system events' data
    after it."""
    notices: list[dict[str, Any]] = []
    for row in reversed(rows):
        if row.kind == EventKind.SYSTEM:
            notices.append(row.data or {})
            continue
        if row.kind == EventKind.HUMAN or row.state == TurnState.DONE:
            return row, notices
    return None, notices


def _noticed(notices: list[dict[str, Any]], when: str, agent: str) -> bool:
    return any(
        kind_of(n) == NoticeKind.PAUSED and n.get("breakpoint") == when and n.get("agent") == agent
        for n in notices
    )


def breakpoint_pause(
    config: RoomConfig, rows: Sequence[storage.Event], speaker: str
) -> Pause | None:
    """The pause due before ``speaker``'s turn, or None (see the module docstring)."""
    after, before = config.breakpoints_of("after"), config.breakpoints_of("before")
    if not after and not before:
        return None
    latest, notices = _tail(rows)
    if (
        latest is not None
        and latest.kind in (EventKind.AGENT, EventKind.PASS)
        and latest.speaker in after
        and not _noticed(notices, "after", latest.speaker)
    ):
        return _pause("after", latest.speaker, f"paused after {latest.speaker} spoke (breakpoint)")
    if speaker in before and not _noticed(notices, "before", speaker):
        return _pause("before", speaker, f"paused before {speaker} speaks (breakpoint)")
    return None


def released(rows: Sequence[storage.Event], speaker: str) -> str | None:
    """When ``speaker``'s turn goes on past its ``before`` breakpoint: who released it (the
    ``by`` of a ``resumed`` notice, or "a person"); None when no breakpoint held it."""
    _, notices = _tail(rows)
    if not _noticed(notices, "before", speaker):
        return None
    for data in notices:  # newest first
        if kind_of(data) == NoticeKind.RESUMED and data.get("by"):
            return str(data["by"])
    return "a person"


def _pause(when: str, agent: str, reason: str) -> Pause:
    return Pause(
        reason, {"event": NoticeKind.PAUSED, "by": "breakpoint", "breakpoint": when, "agent": agent}
    )


__all__ = ["Pause", "breakpoint_pause", "released"]
