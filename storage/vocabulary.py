"""The words stored in status, kind and state columns, and the turn lifecycle.

Stored as plain strings (no database CHECK constraints, so a future word needs no table rebuild on
SQLite); every repository function validates against these sets before writing.
"""

from __future__ import annotations

from typing import Final

ROOM_STATUSES: Final = frozenset(
    {"idle", "running", "paused", "waiting", "stopped", "settled", "terminated", "failed"}
)
"""idle: created, not started. running: a worker may drive it. paused: a person paused it.
waiting: a draft waits for a person's approval. stopped: a person stopped it. settled: the planner
has no next speaker (waiting for a human message). terminated: a termination condition fired.
failed: it cannot go on (e.g. retries exhausted)."""

EVENT_KINDS: Final = frozenset({"human", "agent", "pass", "system"})

TURN_STATES: Final = frozenset(
    {"running", "waiting", "interrupted", "done", "failed", "stopped", "abandoned"}
)
"""Seed-002 turn states; only ``agent`` and ``pass`` events have one (human/system events: NULL)."""

OPEN_TURN_STATES: Final = ("running", "waiting", "interrupted")
"""A turn in one of these states blocks the next claim: at most one open turn per room.
``interrupted`` is included (beyond running/waiting) because an interrupted turn is either resumed
or abandoned (seed 002); letting the log move past it would orphan it."""

TURN_TRANSITIONS: Final[dict[str, frozenset[str]]] = {
    "running": frozenset({"running", "waiting", "interrupted", "done", "failed", "stopped"}),
    "waiting": frozenset({"running", "done", "failed", "stopped", "abandoned"}),
    "interrupted": frozenset({"running", "stopped", "abandoned", "failed"}),
    "done": frozenset(),
    "failed": frozenset(),
    "stopped": frozenset(),
    "abandoned": frozenset(),
}
"""Allowed ``from -> to`` changes. ``waiting -> running`` is a denial (the agent tries again);
``running -> running`` records a retry. Terminal states never change."""

EXPERIMENT_STATUSES: Final = frozenset({"draft", "running", "paused", "stopped", "done", "failed"})

ANALYSIS_STATUSES: Final = frozenset({"pending", "running", "done", "failed", "stopped"})

__all__ = [
    "ANALYSIS_STATUSES",
    "EVENT_KINDS",
    "EXPERIMENT_STATUSES",
    "OPEN_TURN_STATES",
    "ROOM_STATUSES",
    "TURN_STATES",
    "TURN_TRANSITIONS",
]
