"""Speaker transition rules: who may (or may not) speak right after whom.

``TransitionRules({"Alice": ["Bob"]}, mode="allowed")`` says only Bob may follow Alice;
``mode="disallowed"`` says Bob may never follow Alice. A speaker without an entry is unconstrained
in both modes (so a person's messages, usually not listed, constrain nothing unless listed).

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

__all__ = ["TransitionRules", "transitions_from_dict"]

_MODES = ("allowed", "disallowed")


@dataclass(frozen=True, slots=True, init=False)
class TransitionRules:
    """Allowed or disallowed speaker transitions; immutable, hashable, serializable."""

    graph: tuple[tuple[str, tuple[str, ...]], ...]
    mode: Literal["allowed", "disallowed"]

    def __init__(
        self,
        graph: Mapping[str, Iterable[str]],
        mode: Literal["allowed", "disallowed"] = "allowed",
    ) -> None:
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
        if previous is None:
            return True
        for source, targets in self.graph:
            if source == previous:
                return (candidate in targets) == (self.mode == "allowed")
        return True

    def filter(self, previous: str | None, candidates: Iterable[str]) -> list[str]:
        """The permitted candidates, order kept."""
        return [c for c in candidates if self.permits(previous, c)]

    def to_dict(self) -> dict[str, Any]:
        return {"graph": self.as_dict(), "mode": self.mode}


def transitions_from_dict(data: Mapping[str, Any] | None) -> TransitionRules | None:
    """Restore rules written by :meth:`TransitionRules.to_dict` (None stays None)."""
    if data is None:
        return None
    if not isinstance(data, Mapping) or set(data) - {"graph", "mode"} or "graph" not in data:
        raise ConversationValueError(
            f"transition rules must be {{'graph': {{...}}, 'mode': 'allowed'}}, got {data!r}"
        )
    return TransitionRules(data["graph"], data.get("mode", "allowed"))
