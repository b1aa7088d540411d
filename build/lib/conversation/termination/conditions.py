"""Composable stop conditions for rooms and conversations (docs/design.md, "Turn policies and composable termination").

Each condition reads a :class:`~conversation.termination.state.RoomState` and returns a readable reason
or ``None`` (see :mod:`conversation.termination.base` for ``|``, ``&`` and the memory of ``&``).
Conditions that look at "the latest message" mean the latest message event (a pass is a message
event with no text and never mentions anything); the room checks after every event.

Counting and budget conditions (this module):

- :class:`MaxTurns` - roster agents' turns (passes included) since ``resumed_at``:
  ``"max_turns reached (20)"``.
- :class:`MaxMessages` - message events in the current activity, the human message and passes
  included: ``"max_messages reached (10) in this activity"``.
- :class:`TextMention` - the latest message contains ``text`` (from one of ``sources`` when given):
  ``"'DEAL' mentioned by Bob"``.
- :class:`TokenBudget` - prompt, completion and/or total tokens reached a limit.
- :class:`External` - set from outside (a stop button): :meth:`External.set`, or
  ``state.stop_requested``.
- :class:`StoppingFunction` - a conversation-API ``stopping_function(statements) -> bool``.

Conditions that read the dialogue (:mod:`conversation.termination.markers`, re-exported here):
:class:`AllAgreed`, :class:`Supervisor`, :class:`ContestedEscalation`, :class:`Convergence`.

Every built-in serializes with ``to_dict()`` and is restored by :func:`termination_from_dict`,
except those holding a Python callable, which raise :class:`ConversationValueError`
("cannot be serialized").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.planning.events import last_message
from conversation.termination.base import (
    AllOf,
    AnyOf,
    SettingsCondition,
    StopDecision,
    TerminationCondition,
    check_limit,
    names_tuple,
)
from conversation.termination.markers import (
    AllAgreed,
    AllSpoken,
    ContestedEscalation,
    Convergence,
    Supervisor,
)
from conversation.termination.state import RoomState, TokenUsage

__all__ = [
    "AllAgreed",
    "AllSpoken",
    "AllOf",
    "AnyOf",
    "ContestedEscalation",
    "Convergence",
    "External",
    "MaxMessages",
    "MaxTurns",
    "RoomState",
    "StopDecision",
    "StoppingFunction",
    "Supervisor",
    "TerminationCondition",
    "TextMention",
    "TokenBudget",
    "TokenUsage",
    "describe_termination",
    "termination_from_dict",
    "termination_turn_bound",
]


@dataclass(frozen=True)
class MaxTurns(SettingsCondition):
    """Stop once the roster agents took ``max_turns`` turns since the resume point (a turn a
    person stopped before its message is not one)."""

    max_turns: int
    kind = "max_turns"
    label = "Agent turns"
    monotone = True

    def describe(self) -> str:
        return f"after {self.max_turns} agent turns"

    def turn_bound(self) -> int | None:
        return self.max_turns

    def __post_init__(self) -> None:
        check_limit("MaxTurns", "max_turns", self.max_turns, 0)

    def check(self, state: RoomState) -> str | None:
        if state.agent_turns() >= self.max_turns:
            return f"max_turns reached ({self.max_turns})"
        return None


@dataclass(frozen=True)
class MaxMessages(SettingsCondition):
    """Stop once the current activity holds ``max_messages`` message events."""

    max_messages: int
    kind = "max_messages"
    label = "Messages per activity"
    monotone = True

    def describe(self) -> str:
        return f"after {self.max_messages} messages in an activity"

    def turn_bound(self) -> int | None:
        return self.max_messages - 1  # the human message that opened the activity counts

    def __post_init__(self) -> None:
        check_limit("MaxMessages", "max_messages", self.max_messages, 1)

    def check(self, state: RoomState) -> str | None:
        if len(state.scope_messages()) >= self.max_messages:
            return f"max_messages reached ({self.max_messages}) in this activity"
        return None


@dataclass(frozen=True)
class TextMention(SettingsCondition):
    """Stop when the latest message contains ``text`` (said by one of ``sources`` if given)."""

    text: str
    sources: tuple[str, ...] | None = None
    case_sensitive: bool = True
    kind = "text_mention"
    label = "A word or phrase is said"

    def describe(self) -> str:
        return f"when someone says {self.text!r}"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text:
            raise ConversationValueError(
                f"TextMention.text must be a non-empty string, got {self.text!r}; e.g. 'DEAL'"
            )
        object.__setattr__(self, "sources", names_tuple("TextMention", "sources", self.sources))

    def check(self, state: RoomState) -> str | None:
        event = last_message(state.events)
        if event is None or event.passed:
            return None
        if self.sources is not None and event.speaker not in self.sources:
            return None
        haystack, needle = event.content, self.text
        if not self.case_sensitive:
            haystack, needle = haystack.casefold(), needle.casefold()
        if needle in haystack:
            return f"{self.text!r} mentioned by {event.speaker}"
        return None


@dataclass(frozen=True)
class TokenBudget(SettingsCondition):
    """Stop once prompt, completion or total tokens reach their limit (any one set)."""

    max_prompt_tokens: int | None = None
    max_completion_tokens: int | None = None
    max_total_tokens: int | None = None
    kind = "token_budget"
    label = "Token budget"
    monotone = True

    def describe(self) -> str:
        parts = [
            f"{limit} {name} tokens"
            for name, limit in (
                ("prompt", self.max_prompt_tokens),
                ("completion", self.max_completion_tokens),
                ("total", self.max_total_tokens),
            )
            if limit is not None
        ]
        return "after " + " or ".join(parts)

    def __post_init__(self) -> None:
        limits = (self.max_prompt_tokens, self.max_completion_tokens, self.max_total_tokens)
        if all(v is None for v in limits):
            raise ConversationValueError(
                "TokenBudget needs at least one of max_prompt_tokens, max_completion_tokens, "
                "max_total_tokens"
            )
        for name in ("max_prompt_tokens", "max_completion_tokens", "max_total_tokens"):
            if getattr(self, name) is not None:
                check_limit("TokenBudget", name, getattr(self, name), 1)

    def check(self, state: RoomState) -> str | None:
        usage = state.usage
        for label, used, limit in (
            ("prompt", usage.prompt_tokens, self.max_prompt_tokens),
            ("completion", usage.completion_tokens, self.max_completion_tokens),
            ("total", usage.total_tokens, self.max_total_tokens),
        ):
            if limit is not None and used >= limit:
                return f"token budget reached: {label} tokens {used} >= {limit}"
        return None


class External(TerminationCondition):
    """Stop when told from outside: :meth:`set` (e.g. a stop button) or ``state.stop_requested``.

    The flag is the one piece of runtime state a condition holds; rooms that must survive a restart
    store the request with the room and pass it as ``RoomState.stop_requested`` instead.
    """

    kind = "external"
    label = "Stopped from outside"

    def __init__(self, reason: str | None = None) -> None:
        self._reason: str | None = None
        if reason is not None:
            self.set(reason)

    def set(self, reason: str = "stop requested") -> None:
        if not isinstance(reason, str) or not reason:
            raise ConversationValueError("External.set(reason) needs a non-empty string")
        self._reason = reason

    def clear(self) -> None:
        self._reason = None

    @property
    def requested(self) -> str | None:
        return self._reason

    def check(self, state: RoomState) -> str | None:
        reason = self._reason or state.stop_requested
        return None if reason is None else f"stopped from outside: {reason}"

    def first_fired(self, state: RoomState, start: int) -> int | None:
        # A request is about now, not about any earlier prefix of the transcript.
        return len(state.events) if self.check(state) is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self._reason}

    def __repr__(self) -> str:
        return f"External(reason={self._reason!r})"


class StoppingFunction(TerminationCondition):
    """A conversation-API ``stopping_function`` as a condition.

    ``function`` receives ``argument(state)``; by default the roster agents' message events (which
    offer ``.text`` and ``.speaker`` like conversation-API statements). Its exceptions propagate.
    """

    kind = "stopping_function"

    def __init__(
        self,
        function: Callable[[Any], Any],
        *,
        argument: Callable[[RoomState], Any] | None = None,
    ) -> None:
        if not callable(function):
            raise ConversationValueError(
                f"stopping_function must be callable (statements -> bool), got {function!r}"
            )
        self.function = function
        self.argument = argument

    def check(self, state: RoomState) -> str | None:
        value = self.argument(state) if self.argument else state.agent_messages()
        if self.function(value):
            name = getattr(self.function, "__name__", type(self.function).__name__)
            return f"stopping_function {name} returned True"
        return None

    def to_dict(self) -> dict[str, Any]:
        raise ConversationValueError(
            "a stopping_function condition cannot be serialized (arbitrary Python callables "
            "cannot be restored); use a built-in condition such as TextMention"
        )


_KINDS: dict[str, type[TerminationCondition]] = {
    cls.kind: cls
    for cls in (
        MaxTurns,
        MaxMessages,
        TextMention,
        TokenBudget,
        External,
        AllAgreed,
        AllSpoken,
        Supervisor,
        ContestedEscalation,
        Convergence,
    )
}


def describe_termination(data: Mapping[str, Any] | None) -> str:
    """A stored termination condition in words (unknown kinds by name, never an error: a page
    may show a room written by a newer version)."""
    if not data:
        return "none (the planner's caps end each activity)"
    try:
        return termination_from_dict(data).describe()
    except ConversationValueError:
        return str(data.get("kind", "unknown"))


def termination_turn_bound(data: Mapping[str, Any] | None) -> int | None:
    """At most how many agent turns a stored termination condition allows (None: unbounded)."""
    return termination_from_dict(data).turn_bound() if data else None


def termination_from_dict(data: Mapping[str, Any]) -> TerminationCondition:
    """Restore a condition (or a composition) written by ``to_dict()``."""
    if not isinstance(data, Mapping):
        raise ConversationValueError(
            f"a termination dict must be a mapping with a 'kind', got {type(data).__name__}"
        )
    kind = data.get("kind")
    if kind == "any":
        return AnyOf.from_parts(data, termination_from_dict)
    if kind == "all":
        return AllOf.from_parts(data, termination_from_dict)
    if kind == "stopping_function":
        raise ConversationValueError("a stopping_function condition cannot be serialized")
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ConversationValueError(
            f"unknown termination kind {kind!r}; use one of "
            f"{', '.join(sorted([*_KINDS, 'any', 'all']))}"
        )
    settings = {k: v for k, v in data.items() if k != "kind"}
    try:
        if cls is External:
            unknown = set(settings) - {"reason"}
            if unknown:
                raise TypeError(f"unexpected {sorted(unknown)}")
            return External(settings.get("reason"))
        return cls(**settings)
    except TypeError as error:
        raise ConversationValueError(
            f"bad settings for termination kind {kind!r}: {error}"
        ) from None
