"""The termination-condition protocol and its ``|`` / ``&`` composition (docs/design.md, "Turn policies and composable termination").

A condition's ``check(state)`` returns a readable reason (``"max_turns reached (20)"``) when the room
should stop now, else ``None``; reasons are data, stored with the event that ended the room.

- ``a | b`` (:class:`AnyOf`) stops when any part stops now; the first part's reason wins.
- ``a & b`` (:class:`AllOf`) stops once every part has fired at some point since
  ``state.scope_start()`` (the current activity, or the resume point), not necessarily together:
  it *remembers* which parts fired. The memory is derived from the transcript, not kept in the
  object: a part "has fired" when it fires on some prefix of the events ending inside the scope
  (:meth:`TerminationCondition.first_fired`). So a restored room remembers exactly what an
  uninterrupted one would, and a condition object can be shared between rooms.

:meth:`TerminationCondition.evaluate` returns a :class:`StopDecision` with the reason and whether a
person must decide (``escalate``, set by conditions such as ``ContestedEscalation``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from conversation.exceptions import ConversationValueError
from conversation.termination.state import RoomState

__all__ = [
    "AllOf",
    "AnyOf",
    "SettingsCondition",
    "StopDecision",
    "TerminationCondition",
    "check_limit",
    "names_tuple",
]


@dataclass(frozen=True, slots=True)
class StopDecision:
    """Why a room stops: the reason, whether a person must decide, and which kinds fired."""

    reason: str
    escalate: bool = False
    kinds: tuple[str, ...] = ()


class TerminationCondition(ABC):
    """Base of every stop condition. Subclasses set ``kind`` and implement ``check``."""

    kind: ClassVar[str]
    #: True when firing on a prefix implies firing on every longer prefix in the same scope
    #: (counts and budgets); lets :meth:`first_fired` binary-search instead of scanning.
    monotone: ClassVar[bool] = False
    #: True when stopping means "ask a person" rather than "done".
    escalates: ClassVar[bool] = False
    #: What people call it (forms, tables).
    label: ClassVar[str] = ""

    def describe(self) -> str:
        """The condition in words, for people ("after 20 agent turns")."""
        return self.label or self.kind

    def turn_bound(self) -> int | None:
        """At most how many agent turns a room can take before this fires (None: no bound)."""
        return None

    @abstractmethod
    def check(self, state: RoomState) -> str | None:
        """A readable stop reason when the room should stop now, else None."""

    def evaluate(self, state: RoomState) -> StopDecision | None:
        reason = self.check(state)
        if reason is None:
            return None
        return StopDecision(reason, self.escalates, (self.kind,))

    def first_fired(self, state: RoomState, start: int) -> int | None:
        """The shortest prefix length in ``(start, len(events)]`` on which this fires, or None."""
        n = len(state.events)
        lo = min(start + 1, n)
        if self.monotone:
            if self.check(state) is None:
                return None
            hi = n
            while lo < hi:
                mid = (lo + hi) // 2
                if self.check(state.prefix(mid)) is None:
                    lo = mid + 1
                else:
                    hi = mid
            return hi
        for length in range(lo, n + 1):
            if self.check(state if length == n else state.prefix(length)) is not None:
                return length
        return None

    def __or__(self, other: TerminationCondition) -> AnyOf:
        return AnyOf(_flatten(AnyOf, (self, other)))

    def __and__(self, other: TerminationCondition) -> AllOf:
        return AllOf(_flatten(AllOf, (self, other)))

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """``{"kind": ..., <settings>}``; callables raise :class:`ConversationValueError`."""


def _flatten(
    kind: type[AnyOf] | type[AllOf], parts: Iterable[TerminationCondition]
) -> tuple[TerminationCondition, ...]:
    flat: list[TerminationCondition] = []
    for part in parts:
        if not isinstance(part, TerminationCondition):
            raise ConversationValueError(
                f"termination conditions combine only with conditions, got {type(part).__name__}"
            )
        flat.extend(part.parts if type(part) is kind else (part,))  # type: ignore[attr-defined]
    return tuple(flat)


class _Composite(TerminationCondition):
    def __init__(self, parts: Iterable[TerminationCondition]) -> None:
        self.parts = _flatten(type(self), parts)  # type: ignore[arg-type]
        if not self.parts:
            raise ConversationValueError(f"{type(self).__name__} needs at least one condition")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.parts == self.parts  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.parts))

    def __repr__(self) -> str:
        joiner = " | " if isinstance(self, AnyOf) else " & "
        return "(" + joiner.join(repr(p) for p in self.parts) + ")"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "parts": [p.to_dict() for p in self.parts]}

    def describe(self) -> str:
        joiner = " or " if self.kind == "any" else " and "
        return joiner.join(p.describe() for p in self.parts)

    @classmethod
    def from_parts(
        cls,
        data: Mapping[str, Any],
        restore: Callable[[Mapping[str, Any]], TerminationCondition],
    ) -> TerminationCondition:
        parts = data.get("parts")
        if not isinstance(parts, list) or not parts or set(data) - {"kind", "parts"}:
            raise ConversationValueError(
                f"a {cls.kind!r} condition needs a non-empty 'parts' list and nothing else"
            )
        return cls([restore(p) for p in parts])


class AnyOf(_Composite):
    """``a | b``: stops when any part stops now (first part's reason)."""

    kind = "any"
    label = "any of these"

    def turn_bound(self) -> int | None:
        found = [b for b in (p.turn_bound() for p in self.parts) if b is not None]
        return min(found) if found else None

    def check(self, state: RoomState) -> str | None:
        decision = self.evaluate(state)
        return None if decision is None else decision.reason

    def evaluate(self, state: RoomState) -> StopDecision | None:
        for part in self.parts:
            decision = part.evaluate(state)
            if decision is not None:
                return decision
        return None

    def first_fired(self, state: RoomState, start: int) -> int | None:
        fired = [k for k in (p.first_fired(state, start) for p in self.parts) if k is not None]
        return min(fired) if fired else None


class AllOf(_Composite):
    """``a & b``: stops once every part has fired since ``state.scope_start()``."""

    kind = "all"
    label = "all of these"
    monotone = True

    def turn_bound(self) -> int | None:
        bounds = [p.turn_bound() for p in self.parts]
        known = [b for b in bounds if b is not None]
        return max(known) if known and len(known) == len(bounds) else None

    def fired_parts(self, state: RoomState) -> list[int | None]:
        """For each part, the prefix length at which it first fired in scope (None: not yet)."""
        start = state.scope_start()
        return [p.first_fired(state, start) for p in self.parts]

    def check(self, state: RoomState) -> str | None:
        decision = self.evaluate(state)
        return None if decision is None else decision.reason

    def evaluate(self, state: RoomState) -> StopDecision | None:
        fired = self.fired_parts(state)
        if any(k is None for k in fired):
            return None
        decisions = []
        for part, length in zip(self.parts, fired, strict=True):
            assert length is not None
            at = state if length == len(state.events) else state.prefix(length)
            decision = part.evaluate(at)
            if decision is None:  # pragma: no cover - first_fired said it fires there
                return None
            decisions.append(decision)
        return StopDecision(
            " and ".join(d.reason for d in decisions),
            any(d.escalate for d in decisions),
            tuple(k for d in decisions for k in d.kinds),
        )

    def first_fired(self, state: RoomState, start: int) -> int | None:
        fired = [p.first_fired(state, start) for p in self.parts]
        if any(k is None for k in fired):
            return None
        return max(k for k in fired if k is not None)


def check_limit(owner: str, name: str, value: Any, minimum: int) -> None:
    """Raise :class:`ConversationValueError` unless ``value`` is an int ``>= minimum``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConversationValueError(
            f"{owner}.{name} must be an integer >= {minimum}, got {value!r}"
        )


def names_tuple(owner: str, name: str, value: Any) -> tuple[str, ...] | None:
    """None, or a tuple of non-empty names from a name or an iterable of names."""
    if value is None:
        return None
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, Iterable):
        raise ConversationValueError(f"{owner}.{name} must be a name or a list of names")
    names = tuple(items)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ConversationValueError(
            f"{owner}.{name} must hold at least one non-empty name, got {value!r}"
        )
    return names


class SettingsCondition(TerminationCondition):
    """A dataclass condition: ``to_dict`` is its fields plus its kind."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)  # type: ignore[call-overload]
        return {
            "kind": self.kind,
            **{k: list(v) if isinstance(v, tuple) else v for k, v in data.items()},
        }
