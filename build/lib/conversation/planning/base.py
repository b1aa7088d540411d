"""What every turn policy shares: the planning skeleton, seeds, activities and transition rules.

A policy is a frozen dataclass with a ``kind``. :class:`PolicyBase` turns its ``_choose`` into the
planner API (``plan_next``, ``plan_turn``), validates the roster and the transition rules, and
serializes the dataclass fields. Randomness never comes from global state: :func:`turn_rng` builds
a ``random.Random`` from the policy's stored seed and the turn index, so a policy is a pure
function of ``(roster, transcript)``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from typing import Any, ClassVar

from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent, check_roster, opener_index
from conversation.planning.planner import PlannedTurn, check_positive_int, cycle_round
from conversation.planning.transitions import (
    TransitionRules,
    effective_rules,
    transitions_from_dict,
)

__all__ = [
    "PolicyBase",
    "activity_messages",
    "check_seed",
    "first_permitted",
    "fresh_seed",
    "turn_rng",
]


def fresh_seed() -> int:
    """A concrete random seed, drawn once (from the OS) when a policy is built with seed=None."""
    return random.SystemRandom().randrange(2**63)


def check_seed(owner: str, seed: Any) -> int | str:
    """The seed to store: ``None`` becomes a fresh one; otherwise an int or a string."""
    if seed is None:
        return fresh_seed()
    if isinstance(seed, bool) or not isinstance(seed, int | str):
        raise ConversationValueError(
            f"{owner}.seed must be an integer, a string or None, got {seed!r}; "
            "pass e.g. seed=42 for a reproducible order"
        )
    return seed


def turn_rng(seed: int | str, turn: int) -> random.Random:
    """The generator for one turn. String seeding is stable across processes and platforms."""
    return random.Random(f"{seed}:{turn}")


def first_permitted(
    rules: TransitionRules | None, previous: str | None, preference: Sequence[str]
) -> str | None:
    """The first name in ``preference`` the rules let follow ``previous``; None if there is none."""
    for name in preference:
        if rules is None or rules.permits(previous, name):
            return name
    return None


def activity_messages(roster: Sequence[str], transcript: Sequence[RoomEvent]) -> list[RoomEvent]:
    """Message events of the current activity (the whole transcript when no human spoke)."""
    start = opener_index(roster, transcript)
    return [e for e in transcript[0 if start is None else start :] if e.kind == "message"]


class PolicyBase:
    """Base of the built-in policies (frozen dataclasses with a ``transitions`` field)."""

    __slots__ = ()
    kind: ClassVar[str]
    #: What people call it (forms, tables, chart axes).
    label: ClassVar[str]
    #: The settings a form may set (dataclass fields), besides ``transitions``.
    settings: ClassVar[tuple[str, ...]] = ()
    transitions: TransitionRules | None

    def turn_bound(self, roster_size: int) -> int | None:
        """At most how many agent turns one activity can take (None: no bound of its own)."""
        cap = getattr(self, "max_messages", None)
        return cap - 1 if isinstance(cap, int) else None

    def _check_transitions(self) -> None:
        if self.transitions is not None and not isinstance(self.transitions, TransitionRules):
            raise ConversationValueError(
                f"{type(self).__name__}.transitions must be a TransitionRules or None, "
                f"got {type(self.transitions).__name__}"
            )

    def _check_cap(self, name: str, value: Any) -> None:
        check_positive_int(type(self).__name__, name, value, allow_none=True)

    def plan_next(self, roster: Sequence[str], transcript: Sequence[RoomEvent]) -> str | None:
        """The next speaker (always a roster name), or None when there is none."""
        turn = self.plan_turn(roster, transcript)
        return None if turn is None else turn.speaker

    def plan_turn(
        self, roster: Sequence[str], transcript: Sequence[RoomEvent]
    ) -> PlannedTurn | None:
        """The next speaker and the round of its event (completed passes over the roster)."""
        names = check_roster(roster)
        if not names:
            return None
        if self.transitions is not None:
            self.transitions.check(names)
        rules = effective_rules(self.transitions, names, transcript)
        planner = self if rules is self.transitions else replace(self, transitions=rules)  # type: ignore[type-var]
        speaker = planner._choose(names, transcript)
        if speaker is None:
            return None
        reason = planner.because(names, transcript, speaker)
        return PlannedTurn(speaker, cycle_round(names, transcript), reason=reason)

    def _choose(self, roster: tuple[str, ...], transcript: Sequence[RoomEvent]) -> str | None:
        raise NotImplementedError

    def because(
        self, roster: tuple[str, ...], transcript: Sequence[RoomEvent], speaker: str
    ) -> str:
        """Why ``speaker`` (this policy's choice) speaks next, in plain English."""
        return self.label

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": ..., <fields>}``; :func:`conversation.planning.policies.planner_from_dict` restores."""
        data: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            data[f.name] = value.to_dict() if isinstance(value, TransitionRules) else value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Any:
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - names - {"kind"})
        if unknown:
            raise ConversationValueError(
                f"unknown field(s) {unknown} for planner kind {cls.kind!r}; "
                f"allowed: {sorted(names)}"
            )
        values = {k: v for k, v in data.items() if k != "kind"}
        if "transitions" in values:
            values["transitions"] = transitions_from_dict(values["transitions"])
        return cls(**values)
