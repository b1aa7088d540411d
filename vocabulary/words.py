"""The one vocabulary of a room's life: room statuses, event kinds, turn states and the kinds of
turns and notices, with their named sets and the turn lifecycle.

They are ``StrEnum``s: stored as plain strings (no database CHECK constraints, so a future word
needs no table rebuild on SQLite), equal to those strings, and used by name everywhere above
(storage, engine, worker, experiments, pages). This package sits below both ``storage`` and
``conversation`` and imports neither. Every repository function validates against these sets
before writing.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final


class RoomStatus(StrEnum):
    """Where a room is in its life."""

    IDLE = "idle"
    """Created, not started (a human message or ``resume`` starts it)."""
    RUNNING = "running"
    """A worker may drive it."""
    PAUSED = "paused"
    """A person paused it: no new turn until resumed (a turn in flight still lands)."""
    WAITING = "waiting"
    """A drafted message waits for a person's approval."""
    STOPPED = "stopped"
    """A person stopped it."""
    SETTLED = "settled"
    """The planner has no next speaker (a human message starts a new activity)."""
    TERMINATED = "terminated"
    """A termination condition fired (the reason is the room's ``stop_reason``)."""
    FAILED = "failed"
    """It cannot go on (a turn failed, or its next turn cannot be planned); the reason is stored."""


class EventKind(StrEnum):
    """What a log entry is."""

    HUMAN = "human"
    AGENT = "agent"
    PASS = "pass"
    SYSTEM = "system"


class TurnKind(StrEnum):
    """What a turn (an ``agent`` / ``pass`` row) does, stored as its ``data["event"]``.

    A plain speaking turn stores no ``event`` (``SPEAK`` is never written): rows written before
    the kinds were named read the same. Each kind has one handler
    (``conversation.rooms.engine.kinds``): how it is claimed, resumed, committed and shown."""

    SPEAK = "speak"
    """An agent speaks (or passes); the default, stored as no ``event`` at all."""
    SUMMARY = "summary"
    """The room's model summarises what fell out of the context window."""
    CANDIDATES = "candidates"
    """A coordinator-after turn: every eligible agent drafts, the coordinator (or a person) picks."""
    PICK = "pick"
    """A coordinator-before turn: the coordinator agent picks who speaks next."""
    HAND = "hand"
    """An agent in a room with people decides whether to speak (its hand raised or not: its
    ``decision``) and drafts in the same call; a rule of the room (a cap, one agent per
    message, no reply to itself) may keep its hand down without a call. No: a pass."""


class NoticeKind(StrEnum):
    """What a ``system`` notice records, stored as its ``data["event"]`` (with ``data["by"]`` when
    a person did it)."""

    PAUSED = "paused"
    RESUMED = "resumed"
    STOPPED = "stopped"
    TERMINATED = "terminated"
    FAILED = "failed"
    FORKED = "forked"
    CONFIG_CHANGED = "config_changed"


#: The key of an event's ``data`` that holds its ``TurnKind`` / ``NoticeKind``.
KIND_KEY: Final = "event"
_KINDS: Final[dict[str, TurnKind | NoticeKind]] = {
    **{k.value: k for k in TurnKind if k is not TurnKind.SPEAK},
    **{k.value: k for k in NoticeKind},
}


def _data_of(item: Any) -> Mapping[str, Any]:
    data = item if isinstance(item, Mapping) else getattr(item, "data", None)
    return data if isinstance(data, Mapping) else {}


def kind_of(item: Any) -> TurnKind | NoticeKind | None:
    """The kind recorded in an event's ``data["event"]`` (``item``: a row, or its data), or None
    (none recorded, or a word no kind has: read as a plain event)."""
    value = _data_of(item).get(KIND_KEY)
    return _KINDS.get(value) if isinstance(value, str) else None


def turn_kind_of(item: Any) -> TurnKind:
    """A turn's kind (``item``: a row, or its data): ``SPEAK`` unless another is recorded."""
    kind = kind_of(item)
    return kind if isinstance(kind, TurnKind) else TurnKind.SPEAK


class TurnState(StrEnum):
    """Durable-turn states; only ``agent`` and ``pass`` events have one (human/system: NULL)."""

    RUNNING = "running"
    WAITING = "waiting"
    INTERRUPTED = "interrupted"
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"
    ABANDONED = "abandoned"


class ExperimentStatus(StrEnum):
    DRAFT = "draft"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"
    DONE = "done"
    FAILED = "failed"


class AnalysisStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"


class AnswerState(StrEnum):
    """One room's answer to an analysis (revision 0015)."""

    PLANNED = "planned"  # not asked yet
    ASKING = "asking"  # claimed by a runner that is asking it now
    ANSWERED = "answered"
    FAILED = "failed"  # its error says why; a retry plans it again


ANSWER_STATES: Final = frozenset(AnswerState)
OPEN_ANSWER_STATES: Final = frozenset({AnswerState.PLANNED, AnswerState.ASKING})
"""Answers still to come (an analysis with any is running)."""


ROOM_STATUSES: Final = frozenset(RoomStatus)
RUNNABLE_ROOM_STATUSES: Final = frozenset({RoomStatus.RUNNING})
"""A worker may drive a room only in these."""
FINAL_ROOM_STATUSES: Final = frozenset(
    {RoomStatus.STOPPED, RoomStatus.SETTLED, RoomStatus.TERMINATED, RoomStatus.FAILED}
)
"""Nothing will happen in the room without a person (an experiment's room in one is finished)."""
OPEN_ROOM_STATUSES: Final = frozenset(ROOM_STATUSES - FINAL_ROOM_STATUSES)
"""Idle, running, paused, waiting: the room may still take turns."""
REOPENED_BY_A_MESSAGE: Final = frozenset(
    {
        RoomStatus.IDLE,
        RoomStatus.RUNNING,
        RoomStatus.SETTLED,
        RoomStatus.TERMINATED,
        RoomStatus.STOPPED,
    }
)
"""A human message (re)starts a room in these; paused, waiting and failed rooms keep theirs."""
RESUMABLE_ROOM_STATUSES: Final = frozenset({RoomStatus.PAUSED, RoomStatus.FAILED})
"""A person's resume goes on from these (a pause, or a failed turn retried)."""

EVENT_KINDS: Final = frozenset(EventKind)
TURN_KINDS: Final = frozenset({EventKind.AGENT, EventKind.PASS})
"""The kinds of the rows that are agents' turns (they have a turn state)."""
MESSAGE_EVENT_KINDS: Final = frozenset({EventKind.HUMAN, EventKind.AGENT})
"""The kinds of the rows a message can be (a person's, or an agent's finished turn): what a
transcript reads from storage before asking each entry ``is_message``."""

TURN_STATES: Final = frozenset(TurnState)
OPEN_TURN_STATES: Final = (TurnState.RUNNING, TurnState.WAITING, TurnState.INTERRUPTED)
"""A turn in one of these states blocks the next claim: at most one open turn per room.
``interrupted`` is included (beyond running/waiting) because an interrupted turn is either resumed
or abandoned (docs/design.md, "Durable turns"); letting the log move past it would orphan it. A tuple (not a set): its
order is the literal SQL of the partial index ``ix_events_open_turns``."""
FINAL_TURN_STATES: Final = frozenset(TURN_STATES - set(OPEN_TURN_STATES))
CONSUMED_TURN_STATES: Final = frozenset({TurnState.STOPPED, TurnState.ABANDONED, TurnState.FAILED})
"""Final states in which the turn said nothing: it counts as a pass (the turn was consumed)."""

TURN_TRANSITIONS: Final[dict[str, frozenset[str]]] = {
    TurnState.RUNNING: frozenset(
        {
            TurnState.RUNNING,
            TurnState.WAITING,
            TurnState.INTERRUPTED,
            TurnState.DONE,
            TurnState.FAILED,
            TurnState.STOPPED,
        }
    ),
    TurnState.WAITING: frozenset(
        {
            TurnState.RUNNING,
            TurnState.DONE,
            TurnState.FAILED,
            TurnState.STOPPED,
            TurnState.ABANDONED,
        }
    ),
    TurnState.INTERRUPTED: frozenset(
        {TurnState.RUNNING, TurnState.STOPPED, TurnState.ABANDONED, TurnState.FAILED}
    ),
    TurnState.DONE: frozenset(),
    TurnState.FAILED: frozenset(),
    TurnState.STOPPED: frozenset(),
    TurnState.ABANDONED: frozenset(),
}
"""Allowed ``from -> to`` changes. ``waiting -> running`` is a denial (the agent tries again);
``running -> running`` records a retry. Terminal states never change."""

#: Notices recording a person's act on the room (with ``data["by"]``): for people, not agents.
AUDIT_NOTICES: Final = frozenset({NoticeKind.PAUSED, NoticeKind.RESUMED, NoticeKind.FORKED})
#: Notices about how the room is run (a settings change): never shown to agents.
OPERATOR_NOTICES: Final = frozenset({NoticeKind.CONFIG_CHANGED})

EXPERIMENT_STATUSES: Final = frozenset(ExperimentStatus)
ANALYSIS_STATUSES: Final = frozenset(AnalysisStatus)
JUDGE_RUN_STATUSES: Final = frozenset(
    {AnalysisStatus.RUNNING, AnalysisStatus.DONE, AnalysisStatus.FAILED}
)
"""A judge panel's run: running, then done or failed (never pending, never stopped)."""

__all__ = [
    "ANALYSIS_STATUSES",
    "ANSWER_STATES",
    "AUDIT_NOTICES",
    "AnalysisStatus",
    "AnswerState",
    "CONSUMED_TURN_STATES",
    "EVENT_KINDS",
    "EXPERIMENT_STATUSES",
    "EventKind",
    "ExperimentStatus",
    "FINAL_ROOM_STATUSES",
    "FINAL_TURN_STATES",
    "JUDGE_RUN_STATUSES",
    "KIND_KEY",
    "MESSAGE_EVENT_KINDS",
    "NoticeKind",
    "OPEN_ANSWER_STATES",
    "OPEN_ROOM_STATUSES",
    "OPEN_TURN_STATES",
    "OPERATOR_NOTICES",
    "REOPENED_BY_A_MESSAGE",
    "RESUMABLE_ROOM_STATUSES",
    "ROOM_STATUSES",
    "RUNNABLE_ROOM_STATUSES",
    "RoomStatus",
    "TURN_KINDS",
    "TURN_STATES",
    "TURN_TRANSITIONS",
    "TurnKind",
    "TurnState",
    "kind_of",
    "turn_kind_of",
]
