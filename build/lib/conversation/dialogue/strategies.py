"""Conversation-API speaker strategies: thin, stateful adapters over the turn policies.

There is one implementation of each rule, in :mod:`conversation.planning.policies`; a strategy holds the
policy and the legacy ``speakers_so_far`` list:

- ``next_speaker(agent_list)`` (legacy, stateful) returns an element of ``agent_list`` (an EDSL
  ``Agent`` or a string) chosen by the policy from ``speakers_so_far``, and appends it;
- ``plan_next(roster, transcript)`` is the pure planner API (it ignores ``speakers_so_far``), which
  is what ``Conversation`` and rooms use;
- ``reset(history=None)`` forgets, or resumes after, a list of speakers (elements or names);
- ``to_dict()`` / ``SpeakerStrategy.from_dict(d)`` round-trip the name, the seed or focal index
  and the history (as names).

Seeded strategies draw each turn from ``random.Random(f"{seed}:{turn}")``, so a strategy restored
after k turns continues exactly as an uninterrupted one would. ``seed=None`` picks a concrete seed
once, at construction, and keeps it. Every strategy works with a single agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from conversation.dialogue.agent_names import agent_names, history_names, speaker_name
from conversation.exceptions import ConversationStateError, ConversationValueError
from conversation.planning.events import RoomEvent
from conversation.planning.planner import PlannedTurn
from conversation.planning.policies import (
    FocalSpeakerPolicy,
    RandomInclusivePolicy,
    RandomPolicy,
    RoundRobinPolicy,
)

__all__ = [
    "FocalSpeakerStrategy",
    "RandomInclusiveStrategy",
    "RandomSpeakerStrategy",
    "RoundRobinStrategy",
    "SpeakerStrategy",
]

# Names written by earlier versions, still accepted by from_dict.
_ALIASES = {"random_no_repeat": "random", "focal_speaker": "focal", "default": "round_robin"}


class SpeakerStrategy:
    """Base class: a policy plus the legacy ``speakers_so_far`` state."""

    strategy_name: ClassVar[str]
    _params: ClassVar[tuple[str, ...]] = ()

    def __init__(self, policy: Any) -> None:
        self._policy = policy
        self.speakers_so_far: list[Any] = []

    @property
    def policy(self) -> Any:
        """The turn policy this strategy adapts (one implementation of the rule)."""
        return self._policy

    def reset(self, history: Sequence[Any] | None = None) -> None:
        """Forget the speakers so far, or resume after ``history`` (elements or names)."""
        self.speakers_so_far = list(history or [])

    def next_speaker(self, agent_list: Sequence[Any]) -> Any:
        """The next element of ``agent_list``, chosen from ``speakers_so_far``; it is appended."""
        names = agent_names(agent_list)
        history = history_names(agent_list, names, self.speakers_so_far)
        name = self._policy.choose(names, history, history[-1] if history else None)
        if name is None:  # pragma: no cover - strategies carry no transition rules
            raise ConversationStateError(f"{type(self).__name__} named no speaker")
        speaker = agent_list[names.index(name)]
        self.speakers_so_far.append(speaker)
        return speaker

    def plan_next(self, roster: Sequence[str], transcript: Sequence[RoomEvent]) -> str | None:
        """Pure planner API: the policy's choice for ``(roster, transcript)``."""
        result: str | None = self._policy.plan_next(roster, transcript)
        return result

    def plan_turn(
        self, roster: Sequence[str], transcript: Sequence[RoomEvent]
    ) -> PlannedTurn | None:
        result: PlannedTurn | None = self._policy.plan_turn(roster, transcript)
        return result

    def to_dict(self) -> dict[str, Any]:
        history: list[str] = []
        for speaker in self.speakers_so_far:
            name = speaker_name(speaker)
            if name is None:
                raise ConversationValueError(
                    f"{type(self).__name__}.speakers_so_far holds an agent without a name, which "
                    "cannot be serialized; give every agent a name"
                )
            history.append(name)
        data: dict[str, Any] = {"strategy_name": self.strategy_name}
        data.update({param: getattr(self, param) for param in self._params})
        data["speakers_so_far"] = history
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SpeakerStrategy:
        """Restore any built-in strategy; unknown names or fields are rejected."""
        if not isinstance(data, Mapping):
            raise ConversationValueError(
                f"a strategy dict must be a mapping, got {type(data).__name__}"
            )
        raw = data.get("strategy_name")
        name = _ALIASES.get(raw, raw) if isinstance(raw, str) else raw
        kinds = {k.strategy_name: k for k in _STRATEGIES}
        if name not in kinds:
            raise ConversationValueError(
                f"unknown speaker strategy {raw!r}; use one of {', '.join(sorted(kinds))}"
            )
        kind = kinds[name]
        unknown = sorted(set(data) - {"strategy_name", "speakers_so_far", *kind._params})
        if unknown:
            raise ConversationValueError(
                f"unknown field(s) {unknown} for speaker strategy {name!r}"
            )
        strategy = kind(**{p: data[p] for p in kind._params if p in data})
        history = data.get("speakers_so_far") or []
        if not isinstance(history, list) or not all(isinstance(h, str) for h in history):
            raise ConversationValueError(
                f"speakers_so_far must be a list of names, got {history!r}"
            )
        strategy.reset(history)
        return strategy

    def __repr__(self) -> str:
        params = ", ".join(f"{p}={getattr(self, p)!r}" for p in self._params)
        return f"{type(self).__name__}({params})"


class RoundRobinStrategy(SpeakerStrategy):
    """Agents in list order, continuing after the last one who spoke (the conversation-API default)."""

    strategy_name = "round_robin"

    def __init__(self) -> None:
        super().__init__(RoundRobinPolicy())


class FocalSpeakerStrategy(SpeakerStrategy):
    """The focal agent speaks first and between every other agent's turn (e.g. an auctioneer).

    ``focal_speaker_index`` (None means 0) is checked against the agent list when used.
    """

    strategy_name = "focal"
    _params = ("focal_speaker_index",)

    def __init__(self, focal_speaker_index: int | None = 0) -> None:
        super().__init__(FocalSpeakerPolicy(focal_speaker_index))

    @property
    def focal_speaker_index(self) -> int:
        index: int = self._policy.focal_speaker_index
        return index


class _SeededStrategy(SpeakerStrategy):
    _params = ("seed",)

    @property
    def seed(self) -> int | str:
        seed: int | str = self._policy.seed
        return seed


class RandomSpeakerStrategy(_SeededStrategy):
    """Seeded random order, never the same agent twice in a row (unless there is only one)."""

    strategy_name = "random"

    def __init__(self, seed: int | str | None = None) -> None:
        super().__init__(RandomPolicy(seed))


class RandomInclusiveStrategy(_SeededStrategy):
    """Seeded random order in cycles: every agent speaks once before anyone speaks again."""

    strategy_name = "random_inclusive"

    def __init__(self, seed: int | str | None = None) -> None:
        super().__init__(RandomInclusivePolicy(seed))


_STRATEGIES: tuple[type[SpeakerStrategy], ...] = (
    RoundRobinStrategy,
    FocalSpeakerStrategy,
    RandomSpeakerStrategy,
    RandomInclusiveStrategy,
)
