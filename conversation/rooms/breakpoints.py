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

from conversation.rooms.config import RoomConfig
from conversation.vocabulary import (
    BREAKPOINT_ACTOR,
    HumanMessage,
    LogEntry,
    Notice,
    NoticeKind,
    entry_of,
)


@dataclass(frozen=True, slots=True)
class Pause:
    """A breakpoint that stops the room now: the room's reason and its notice's data."""

    reason: str
    data: dict[str, Any]


def _tail(rows: Sequence[Any]) -> tuple[LogEntry | None, list[Notice]]:
    """The latest message (a person's, or a finished agent turn) and the notices after it,
    newest first (``rows``: stored rows or their entries, in seq order)."""
    notices: list[Notice] = []
    for entry in map(entry_of, reversed(rows)):
        if isinstance(entry, Notice):
            notices.append(entry)
            continue
        if isinstance(entry, HumanMessage) or entry.is_done:
            return entry, notices
    return None, notices


def _noticed(notices: list[Notice], when: str, agent: str) -> bool:
    return any(
        n.notice is NoticeKind.PAUSED
        and n.data.get("breakpoint") == when
        and n.data.get("agent") == agent
        for n in notices
    )


def breakpoint_pause(config: RoomConfig, rows: Sequence[Any], speaker: str) -> Pause | None:
    """The pause due before ``speaker``'s turn, or None (see the module docstring); ``rows``:
    the log's stored rows or their entries."""
    after, before = config.breakpoints_of("after"), config.breakpoints_of("before")
    if not after and not before:
        return None
    latest, notices = _tail(rows)
    if (
        latest is not None
        and latest.is_turn
        and latest.speaker in after
        and not _noticed(notices, "after", latest.speaker)
    ):
        return _pause("after", latest.speaker, f"paused after {latest.speaker} spoke (breakpoint)")
    if speaker in before and not _noticed(notices, "before", speaker):
        return _pause("before", speaker, f"paused before {speaker} speaks (breakpoint)")
    return None


def released(rows: Sequence[Any], speaker: str) -> str | None:
    """When ``speaker``'s turn goes on past its ``before`` breakpoint: who released it (the
    ``by`` of a ``resumed`` notice, or "a person"); None when no breakpoint held it."""
    _, notices = _tail(rows)
    if not _noticed(notices, "before", speaker):
        return None
    for notice in notices:  # newest first
        if notice.notice is NoticeKind.RESUMED and notice.data.get("by"):
            return str(notice.data["by"])
    return "a person"


def _pause(when: str, agent: str, reason: str) -> Pause:
    return Pause(
        reason,
        {"event": NoticeKind.PAUSED, "by": BREAKPOINT_ACTOR, "breakpoint": when, "agent": agent},
    )


__all__ = ["Pause", "breakpoint_pause", "released"]
