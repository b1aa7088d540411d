"""Reading a room's stored log as the pure core sees it.

Storage keeps one row per event (human, agent, pass, system) with a turn state; planners,
termination conditions and context windows read ``RoomEvent`` values. This module is the one
translation between the two, so every worker, every restart and every replay sees the same thing:

- a human message is a message by a non-roster speaker (it opens an activity);
- a finished agent turn (``done``) is the agent's message; a pass, or a turn that was stopped,
  abandoned or failed, is a pass (the turn was consumed);
- open turns (``running``, ``waiting``, ``interrupted``) are left out: nothing is planned while
  one is open, and a turn's own prompt is built from the events before it;
- system events stay ``system`` (shown, never a turn), except those whose ``data.event`` is
  ``pick`` or ``summary`` (bookkeeping of the coordinator and of context summaries), and
  ``resumed`` (an import's resume point, from which caps count).

Rows are duck-typed (``seq, kind, speaker, content, round, state, visible_to, data,
input_tokens, output_tokens``) so this module needs nothing from ``storage``.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conversation.planning.events import RoomEvent
from conversation.termination.state import RoomState, TokenUsage

OPEN_STATES = frozenset({"running", "waiting", "interrupted"})
CONSUMED_STATES = frozenset({"stopped", "abandoned", "failed"})
RESUMED = "resumed"


def _data(row: Any) -> Mapping[str, Any]:
    data = getattr(row, "data", None)
    return data if isinstance(data, Mapping) else {}


def to_room_event(row: Any) -> RoomEvent | None:
    """The ``RoomEvent`` a stored row stands for, or None for an open turn."""
    kind = row.kind
    visible = tuple(row.visible_to) if row.visible_to else None
    round_ = row.round or 0
    if kind == "human":
        return RoomEvent(row.speaker, row.content or "", round_, visible_to=visible)
    if kind in ("agent", "pass"):
        if row.state in OPEN_STATES:
            return None
        if _data(row).get("event") == "summary":
            return None  # a context summary: placed by ``log_view``, which knows the positions
        if _data(row).get("event") == "pick":
            # A coordinator's pick, asked of its model as a turn: bookkeeping, never a message.
            if row.state != "done":
                return None
            pick = _data(row).get("pick")
            return RoomEvent(row.speaker, pick or "", round_, pick is None, kind="pick")
        passed = kind == "pass" or row.state in CONSUMED_STATES
        content = "" if passed else (row.content or "")
        return RoomEvent(row.speaker, content, round_, passed, visible_to=visible)
    data = _data(row)
    special = data.get("event")
    if special == "pick":
        return RoomEvent(
            row.speaker, row.content or "", round_, bool(data.get("passed")), kind="pick"
        )
    if special == "summary":
        covers = data.get("covers")
        return RoomEvent(
            row.speaker,
            row.content or "",
            round_,
            kind="summary",
            covers=tuple(covers) if covers else None,
        )
    return RoomEvent(row.speaker, row.content or "", round_, kind="system", visible_to=visible)


@dataclass(frozen=True, slots=True)
class LogView:
    """A room's log as the core reads it: events with their seqs, usage, and the resume point."""

    roster: tuple[str, ...]
    events: tuple[RoomEvent, ...]
    seqs: tuple[int, ...]
    usage: Mapping[int, TokenUsage]
    resumed_at: int
    last_seq: int

    def state(self, stop_requested: str | None = None) -> RoomState:
        return RoomState(
            self.roster,
            self.events,
            event_usage=self.usage,
            stop_requested=stop_requested,
            resumed_at=self.resumed_at,
        )

    def agent_turns(self) -> int:
        """Roster agents' turns since the resume point (the turns-left counter)."""
        members = set(self.roster)
        return sum(
            1
            for e in self.events[self.resumed_at :]
            if e.kind == "message" and e.speaker in members
        )


def log_view(
    roster: Sequence[str], rows: Sequence[Any], *, before_seq: int | None = None
) -> LogView:
    """The view of ``rows`` (in seq order), optionally only those with ``seq < before_seq``."""
    events: list[RoomEvent] = []
    seqs: list[int] = []
    usage: dict[int, TokenUsage] = {}
    resumed_at = 0
    last_seq = 0
    for row in rows:
        if before_seq is not None and row.seq >= before_seq:
            break
        last_seq = row.seq
        if row.kind == "system" and _data(row).get("event") == RESUMED:
            resumed_at = len(events)
            continue
        event = to_room_event(row)
        if event is None:
            event = _summary_event(row, seqs)
        if event is None:
            continue
        if row.input_tokens or row.output_tokens:
            usage[len(events)] = TokenUsage(row.input_tokens or 0, row.output_tokens or 0)
        events.append(event)
        seqs.append(row.seq)
    return LogView(tuple(roster), tuple(events), tuple(seqs), usage, resumed_at, last_seq)


def _summary_event(row: Any, seqs: Sequence[int]) -> RoomEvent | None:
    """A finished context-summary turn as a summary event. It stores what it covers as seqs
    (stable whatever is filtered out); the core reads positions in this view."""
    data = _data(row)
    covered = data.get("covers_seqs")
    if data.get("event") != "summary" or row.state != "done" or not row.content or not covered:
        return None
    covers = (_position(seqs, covered[0]), _position(seqs, covered[1]))
    return RoomEvent(row.speaker, row.content, row.round or 0, kind="summary", covers=covers)


def _position(seqs: Sequence[int], seq: int) -> int:
    """The position of the first event at or after ``seq`` (len(seqs) when none)."""
    return bisect.bisect_left(list(seqs), seq)


def covers_seqs(view: LogView, covers: tuple[int, int]) -> list[int]:
    """A summary's covered positions ``[start, end)`` as seqs ``[start, end)``."""

    def seq_at(position: int) -> int:
        return view.seqs[position] if position < len(view.seqs) else view.last_seq + 1

    return [seq_at(covers[0]), seq_at(covers[1])]


def max_turns_of(termination: Mapping[str, Any] | None) -> int | None:
    """The smallest ``max_turns`` anywhere in a stored termination condition (for the hint)."""
    if not isinstance(termination, Mapping):
        return None
    found: list[int] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            if node.get("kind") == "max_turns" and isinstance(node.get("max_turns"), int):
                found.append(node["max_turns"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(termination)
    return min(found) if found else None


def turn_request_id(seq: int) -> str:
    """The deterministic request id of the agent turn at ``seq`` (the same turn, the same id)."""
    return f"turn-{seq}"


__all__ = [
    "covers_seqs",
    "CONSUMED_STATES",
    "OPEN_STATES",
    "LogView",
    "log_view",
    "max_turns_of",
    "to_room_event",
    "turn_request_id",
]
