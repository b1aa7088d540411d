"""``RoomState``: the one view of a room's log, read by every pure part of the core.

A frozen value built from a room's log (``rooms.log``) or by ``Conversation`` before each turn;
termination conditions evaluate it, planners and prompt builders read it:

- ``roster``: the agent names, in order;
- ``events``: the transcript (:class:`~conversation.planning.events.RoomEvent`), oldest first;
- ``usage``: token totals so far (:class:`TokenUsage`); when omitted it is the sum of
  ``event_usage``, an optional mapping from an event's position to the tokens its turn used;
- ``stop_requested``: a reason when someone asked the room to stop from outside (the stop button,
  stored with the room), else None;
- ``resumed_at``: the position where this run resumed (an imported transcript): turn caps count
  from there, and ``&`` remembers only what fired from there on;
- ``seqs`` and ``last_seq`` (a view of a stored log; empty and 0 otherwise): each event's seq in
  the log, and the log's last seq (hidden rows included);
- ``lines``, ``costs`` and ``turns`` (kept by a room's log as rows arrive; empty / None
  otherwise): each event's transcript line (``text.transcript.event_line``) and estimated prompt
  tokens, and the agent-turn count, derived once per event instead of once per turn.

:meth:`RoomState.scope_start` is where memory and per-activity counts begin: the current
activity's human message (position 0 when no human spoke), or ``resumed_at`` if later.
Conditions are pure functions of this value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent, activity_start, check_roster

__all__ = ["RoomState", "TokenUsage"]


def _count(owner: str, name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConversationValueError(
            f"{owner}.{name} must be a non-negative integer, got {value!r}"
        )
    return value


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens used: prompt (input) and completion (output)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __post_init__(self) -> None:
        _count("TokenUsage", "prompt_tokens", self.prompt_tokens)
        _count("TokenUsage", "completion_tokens", self.completion_tokens)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


def _checked_usage(
    usage: Any, event_usage: Mapping[int, TokenUsage] | None
) -> tuple[TokenUsage, Mapping[int, TokenUsage] | None]:
    """``usage`` (the sum of ``event_usage`` when None) and a read-only copy of ``event_usage``."""
    per_event = None
    if event_usage is not None:
        per_event = MappingProxyType(dict(event_usage))
        if not all(isinstance(u, TokenUsage) for u in per_event.values()):
            raise ConversationValueError("RoomState.event_usage values must be TokenUsage")
    if usage is None:
        # Plain integer sums (a long room's state is built once per turn: no object per event).
        usage = (
            TokenUsage(
                sum(u.prompt_tokens for u in per_event.values()),
                sum(u.completion_tokens for u in per_event.values()),
            )
            if per_event
            else TokenUsage()
        )
    if not isinstance(usage, TokenUsage):
        raise ConversationValueError(
            f"RoomState.usage must be a TokenUsage, got {type(usage).__name__}"
        )
    return usage, per_event


def _per_event(name: str, values: Sequence[Any], events: int) -> tuple[Any, ...]:
    """``values`` as a tuple holding one value per event (or none at all)."""
    items = tuple(values)
    if items and len(items) != events:
        raise ConversationValueError(
            f"RoomState.{name} must hold one value per event ({events}), got {len(items)}"
        )
    return items


@dataclass(frozen=True, slots=True, init=False)
class RoomState:
    """A room's log as the core reads it (see the module docstring)."""

    roster: tuple[str, ...]
    events: tuple[RoomEvent, ...]
    usage: TokenUsage
    event_usage: Mapping[int, TokenUsage] | None = field(compare=False, hash=False)
    stop_requested: str | None
    resumed_at: int
    seqs: tuple[int, ...]
    last_seq: int
    #: Derived once per event by a room's log (empty otherwise): each event's transcript line
    #: and estimated prompt tokens (``context.window.event_tokens``).
    lines: tuple[str, ...] = field(compare=False, hash=False)
    costs: tuple[int, ...] = field(compare=False, hash=False)
    #: The agent-turn count when the caller already knows it (a RoomLog keeps it): the same
    #: number ``agent_turns()`` would count, without a scan of the transcript.
    turns: int | None = field(compare=False, hash=False)

    def __init__(
        self,
        roster: Sequence[str],
        events: Sequence[RoomEvent] = (),
        *,
        usage: TokenUsage | None = None,
        event_usage: Mapping[int, TokenUsage] | None = None,
        stop_requested: str | None = None,
        resumed_at: int = 0,
        seqs: Sequence[int] = (),
        last_seq: int | None = None,
        lines: Sequence[str] = (),
        costs: Sequence[int] = (),
        turns: int | None = None,
    ) -> None:
        names = check_roster(roster)
        items = tuple(events)
        if not all(isinstance(e, RoomEvent) for e in items):
            raise ConversationValueError("RoomState.events must hold RoomEvent values")
        usage, per_event = _checked_usage(usage, event_usage)
        if stop_requested is not None and not isinstance(stop_requested, str):
            raise ConversationValueError("RoomState.stop_requested must be a string or None")
        _count("RoomState", "resumed_at", resumed_at)
        seqs = _per_event("seqs", seqs, len(items))
        if last_seq is None:
            last_seq = seqs[-1] if seqs else 0
        _count("RoomState", "last_seq", last_seq)
        for name, value in (
            ("roster", names),
            ("events", items),
            ("usage", usage),
            ("event_usage", per_event),
            ("stop_requested", stop_requested),
            ("resumed_at", resumed_at),
            ("seqs", seqs),
            ("last_seq", last_seq),
            ("lines", _per_event("lines", lines, len(items))),
            ("costs", _per_event("costs", costs, len(items))),
            ("turns", turns),
        ):
            object.__setattr__(self, name, value)

    @classmethod
    def of_checked(
        cls,
        roster: tuple[str, ...],
        events: tuple[RoomEvent, ...],
        *,
        usage: TokenUsage,
        event_usage: Mapping[int, TokenUsage],
        resumed_at: int,
        seqs: tuple[int, ...],
        last_seq: int,
        lines: tuple[str, ...] = (),
        costs: tuple[int, ...] = (),
        turns: int | None = None,
        stop_requested: str | None = None,
    ) -> RoomState:
        """A state from values already checked and owned by the caller (a room's log, kept as
        rows arrive): no per-event validation or copying, so it costs O(1), not O(events)."""
        state = object.__new__(cls)
        for name, value in (
            ("roster", roster),
            ("events", events),
            ("usage", usage),
            ("event_usage", MappingProxyType(event_usage)),
            ("stop_requested", stop_requested),
            ("resumed_at", resumed_at),
            ("seqs", seqs),
            ("last_seq", last_seq),
            ("lines", lines),
            ("costs", costs),
            ("turns", turns),
        ):
            object.__setattr__(state, name, value)
        return state

    def state(self, stop_requested: str | None = None) -> RoomState:
        """This view with ``stop_requested`` set (itself when it already is): what a condition
        evaluates. Kept for callers written when the log's view and the state were two types."""
        if stop_requested == self.stop_requested:
            return self
        copy = object.__new__(RoomState)
        for name in self.__slots__:
            object.__setattr__(copy, name, getattr(self, name))
        object.__setattr__(copy, "stop_requested", stop_requested)
        return copy

    def prefix(self, length: int) -> RoomState:
        """The state as it was after the first ``length`` events.

        Usage is recomputed from ``event_usage`` when given; otherwise the totals are kept (only
        the full state is then exact, which is all monotone conditions such as a budget need).
        """
        usage = None if self.event_usage is not None else self.usage
        kept = (
            None
            if self.event_usage is None
            else {i: u for i, u in self.event_usage.items() if i < length}
        )
        seqs = self.seqs[:length]
        return RoomState(
            self.roster,
            self.events[:length],
            usage=usage,
            event_usage=kept,
            stop_requested=self.stop_requested,
            resumed_at=min(self.resumed_at, length),
            seqs=seqs,
            last_seq=seqs[-1] if seqs else 0,
            lines=self.lines[:length],
            costs=self.costs[:length],
        )

    def scope_start(self) -> int:
        """Where per-activity counts and ``&`` memory begin (see the module docstring)."""
        return max(activity_start(self.roster, self.events), self.resumed_at)

    def agent_turns(self) -> int:
        """Roster agents' turns (messages and passes) since ``resumed_at``; a turn a person
        stopped before its message (``RoomEvent.stopped``) is not one."""
        if self.turns is not None:
            return self.turns
        members = set(self.roster)
        return sum(
            1
            for e in self.events[self.resumed_at :]
            if e.kind == "message" and e.speaker in members and not e.stopped
        )

    def scope_messages(self) -> list[tuple[int, RoomEvent]]:
        """``(position, event)`` for the message events from :meth:`scope_start` on."""
        start = self.scope_start()
        return [(i, e) for i, e in enumerate(self.events) if i >= start and e.kind == "message"]

    def agent_messages(self) -> list[RoomEvent]:
        """Every message event by a roster agent (passes included), oldest first."""
        members = set(self.roster)
        return [e for e in self.events if e.kind == "message" and e.speaker in members]
