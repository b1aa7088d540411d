"""Speaker transition rules: who may (or may not) speak right after whom.

``TransitionRules({"Alice": ["Bob"]}, mode="allowed")`` says only Bob may follow Alice;
``mode="disallowed"`` says Bob may never follow Alice. A speaker without an entry is unconstrained
in both modes (so a person's messages, usually not listed, constrain nothing unless listed).

**Retirement**: ``retire_on="I'M DONE"`` and/or ``retire_after=3`` take an agent out of the
rotation once it has said that phrase (case-sensitive, anywhere in one of its messages) or taken
that many turns, counted over the whole transcript (:func:`retired_agents`). Every planner then
treats it as never permitted; when everyone has retired the activity settles. The stop rule
``AllSpoken`` ends a room once every agent has spoken or retired.

The *previous speaker* is the speaker of the latest message event (a human, an agent, or a pass).

Every planner in :mod:`conversation.planning.policies` filters its candidates through :meth:`permits`,
including on its fallback path: when the preferred speaker is excluded the planner looks for the
next permitted one, and when no one is permitted it returns ``None`` (the activity settles) rather
than name a speaker the rules exclude. Silently falling back to an excluded speaker is a known
livelock in other systems (the rule is broken, the same excluded turn repeats).

Target names must be on the roster (a typo would otherwise never match and silently constrain
nothing): :meth:`check` raises :class:`ConversationValueError` naming them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from conversation.exceptions import ConversationValueError

__all__ = ["TransitionRules", "effective_rules", "retired_agents", "transitions_from_dict"]

_MODES = ("allowed", "disallowed")


@dataclass(frozen=True, slots=True, init=False)
class TransitionRules:
    """Allowed or disallowed speaker transitions; immutable, hashable, serializable."""

    graph: tuple[tuple[str, tuple[str, ...]], ...]
    mode: Literal["allowed", "disallowed"]
    retire_on: str | None
    retire_after: int | None
    excluded: frozenset[str]  # runtime only: who is retired right now (never stored)

    def __init__(
        self,
        graph: Mapping[str, Iterable[str]] | None = None,
        mode: Literal["allowed", "disallowed"] = "allowed",
        *,
        retire_on: str | None = None,
        retire_after: int | None = None,
    ) -> None:
        graph = {} if graph is None else graph
        if retire_on is not None and (not isinstance(retire_on, str) or not retire_on.strip()):
            raise ConversationValueError(
                f"TransitionRules.retire_on must be a non-empty phrase or None, got {retire_on!r}"
            )
        if retire_after is not None and (
            not isinstance(retire_after, int) or isinstance(retire_after, bool) or retire_after < 1
        ):
            raise ConversationValueError(
                f"TransitionRules.retire_after must be an integer >= 1 or None, got {retire_after!r}"
            )
        object.__setattr__(self, "retire_on", retire_on)
        object.__setattr__(self, "retire_after", retire_after)
        object.__setattr__(self, "excluded", frozenset())
        if mode not in _MODES:
            raise ConversationValueError(
                f"TransitionRules.mode must be 'allowed' or 'disallowed', got {mode!r}"
            )
        if not isinstance(graph, Mapping):
            raise ConversationValueError(
                "TransitionRules.graph must map a speaker to the names that may (or may not) "
                f"follow it, e.g. {{'Alice': ['Bob']}}; got {type(graph).__name__}"
            )
        pairs: list[tuple[str, tuple[str, ...]]] = []
        for source, targets in graph.items():
            if not isinstance(source, str) or not source:
                raise ConversationValueError(
                    f"TransitionRules.graph keys must be speaker names, got {source!r}"
                )
            if isinstance(targets, str) or not isinstance(targets, Iterable):
                raise ConversationValueError(
                    f"TransitionRules.graph[{source!r}] must be a list of names, got {targets!r}"
                )
            names = tuple(dict.fromkeys(targets))
            if not all(isinstance(n, str) and n for n in names):
                raise ConversationValueError(
                    f"TransitionRules.graph[{source!r}] must hold names, got {list(names)!r}"
                )
            pairs.append((source, names))
        # Sorted so equal rules compare and serialize equal whatever the input order.
        object.__setattr__(self, "graph", tuple(sorted(pairs)))
        object.__setattr__(self, "mode", mode)

    def as_dict(self) -> dict[str, list[str]]:
        return {source: list(targets) for source, targets in self.graph}

    def check(self, roster: Sequence[str]) -> None:
        """Raise :class:`ConversationValueError` when a target is not on the roster."""
        members = set(roster)
        for source, targets in self.graph:
            unknown = [t for t in targets if t not in members]
            if unknown:
                raise ConversationValueError(
                    f"transition rules name {unknown} after {source!r}, but they are not on the "
                    f"roster {list(roster)}; fix the names or the roster"
                )

    def permits(self, previous: str | None, candidate: str) -> bool:
        """Whether ``candidate`` may speak right after ``previous`` (None: nobody yet)."""
        if candidate in self.excluded:
            return False
        if previous is None:
            return True
        for source, targets in self.graph:
            if source == previous:
                return (candidate in targets) == (self.mode == "allowed")
        return True

    def filter(self, previous: str | None, candidates: Iterable[str]) -> list[str]:
        """The permitted candidates, order kept."""
        return [c for c in candidates if self.permits(previous, c)]

    @property
    def retires(self) -> bool:
        return self.retire_on is not None or self.retire_after is not None

    def excluding(self, names: Iterable[str]) -> TransitionRules:
        """These rules with ``names`` never permitted (the retired agents, for one plan)."""
        copy = TransitionRules(
            dict(self.as_dict()),
            self.mode,
            retire_on=self.retire_on,
            retire_after=self.retire_after,
        )
        object.__setattr__(copy, "excluded", frozenset(names))
        return copy

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"graph": self.as_dict(), "mode": self.mode}
        if self.retire_on is not None:
            data["retire_on"] = self.retire_on
        if self.retire_after is not None:
            data["retire_after"] = self.retire_after
        return data


def retired_agents(
    roster: Sequence[str],
    transcript: Sequence[Any],
    *,
    retire_on: str | None,
    retire_after: int | None,
) -> frozenset[str]:
    """The agents who have left the rotation: said ``retire_on`` in one of their messages, or
    took ``retire_after`` turns (passes count), over the whole transcript."""
    if retire_on is None and retire_after is None:
        return frozenset()
    members = set(roster)
    turns: dict[str, int] = {}
    retired: set[str] = set()
    for event in transcript:
        if event.kind != "message" or event.speaker not in members:
            continue
        turns[event.speaker] = turns.get(event.speaker, 0) + 1
        if retire_on is not None and not event.passed and retire_on in event.content:
            retired.add(event.speaker)
        if retire_after is not None and turns[event.speaker] >= retire_after:
            retired.add(event.speaker)
    return frozenset(retired)


def effective_rules(
    rules: TransitionRules | None, roster: Sequence[str], transcript: Sequence[Any]
) -> TransitionRules | None:
    """``rules`` for the next plan: with the retired agents excluded (when they retire anyone)."""
    if rules is None or not rules.retires:
        return rules
    retired = retired_agents(
        roster, transcript, retire_on=rules.retire_on, retire_after=rules.retire_after
    )
    return rules.excluding(retired) if retired else rules


def transitions_from_dict(data: Mapping[str, Any] | None) -> TransitionRules | None:
    """Restore rules written by :meth:`TransitionRules.to_dict` (None stays None)."""
    if data is None:
        return None
    known = {"graph", "mode", "retire_on", "retire_after"}
    if not isinstance(data, Mapping) or set(data) - known or "graph" not in data:
        raise ConversationValueError(
            "transition rules must be {'graph': {...}, 'mode': 'allowed'} (optionally "
            f"'retire_on' and 'retire_after'), got {data!r}"
        )
    return TransitionRules(
        data["graph"],
        data.get("mode", "allowed"),
        retire_on=data.get("retire_on"),
        retire_after=data.get("retire_after"),
    )
