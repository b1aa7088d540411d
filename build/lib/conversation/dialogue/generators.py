"""The conversation API's turn-taking generator functions, delegating to :mod:`conversation.planning.policies`.

Each has the signature ``(agent_list, speakers_so_far, focal_speaker_index=..., **kwargs)`` and
returns an element of ``agent_list`` (an EDSL ``Agent`` or a string); ``speakers_so_far`` holds
elements (or names) of earlier turns. Pass one as ``Conversation(next_speaker_generator=...)``.

- ``default_turn_taking_generator``: round robin.
- ``turn_taking_generator_with_focal_speaker``: the focal agent between every other turn;
  ``focal_speaker_index=None`` means 0, so it is usable through ``Conversation`` (which passes
  None); an index outside the list raises :class:`ConversationValueError`.
- ``random_turn_taking_generator``: random, no agent twice in a row.
- ``random_inclusive_generator``: random, every agent once before anyone repeats.

The random ones accept ``seed=`` (reproducible: the same draws as ``RandomSpeakerStrategy(seed)``
for the same history) or ``rng=`` (a ``random.Random`` to draw the turn's seed from). Without
either they draw from a module-private ``random.Random()``, never the global ``random`` state.
Every function works with a single agent. For serializable turn taking, prefer the strategy
classes in :mod:`conversation.dialogue.strategies`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from conversation.dialogue.agent_names import agent_names, history_names
from conversation.exceptions import ConversationStateError, ConversationValueError
from conversation.planning.policies import (
    FocalSpeakerPolicy,
    RandomInclusivePolicy,
    RandomPolicy,
    RoundRobinPolicy,
)

__all__ = [
    "default_turn_taking_generator",
    "random_inclusive_generator",
    "random_turn_taking_generator",
    "speaker_closure",
    "turn_taking_generator_with_focal_speaker",
]

# Private so unseeded draws neither disturb nor depend on anyone's use of the global RNG.
_RNG = random.Random()


def _pick(policy: Any, agent_list: Sequence[Any], speakers_so_far: Sequence[Any] | None) -> Any:
    names = agent_names(agent_list)
    history = history_names(agent_list, names, speakers_so_far or [])
    name = policy.choose(names, history, history[-1] if history else None)
    if name is None:  # pragma: no cover - these policies carry no transition rules
        raise ConversationStateError("the turn-taking rule named no speaker")
    return agent_list[names.index(name)]


def _seed(rng: random.Random | None, seed: int | str | None) -> int | str:
    if rng is not None and seed is not None:
        raise ConversationValueError("pass either rng= or seed=, not both")
    if seed is not None:
        return seed
    source = _RNG if rng is None else rng
    if not isinstance(source, random.Random):
        raise ConversationValueError(
            f"rng must be a random.Random instance, got {type(source).__name__}"
        )
    return source.getrandbits(64)


def default_turn_taking_generator(
    agent_list: Sequence[Any],
    speakers_so_far: Sequence[Any],
    focal_speaker_index: int | None = None,
    **kwargs: Any,
) -> Any:
    """The next agent in list order after the last speaker; the first one to begin."""
    return _pick(RoundRobinPolicy(), agent_list, speakers_so_far)


def turn_taking_generator_with_focal_speaker(
    agent_list: Sequence[Any],
    speakers_so_far: Sequence[Any],
    focal_speaker_index: int | None = 0,
    **kwargs: Any,
) -> Any:
    """The focal agent first and after every other agent; the others take turns in order."""
    return _pick(FocalSpeakerPolicy(focal_speaker_index), agent_list, speakers_so_far)


def random_turn_taking_generator(
    agent_list: Sequence[Any],
    speakers_so_far: Sequence[Any],
    focal_speaker_index: int | None = None,
    *,
    rng: random.Random | None = None,
    seed: int | str | None = None,
    **kwargs: Any,
) -> Any:
    """A random agent, never the last speaker again (unless it is the only agent)."""
    return _pick(RandomPolicy(_seed(rng, seed)), agent_list, speakers_so_far)


def random_inclusive_generator(
    agent_list: Sequence[Any],
    speakers_so_far: Sequence[Any],
    focal_speaker_index: int | None = None,
    *,
    rng: random.Random | None = None,
    seed: int | str | None = None,
    **kwargs: Any,
) -> Any:
    """A random agent that has not spoken in the current cycle, and not the last speaker."""
    return _pick(RandomInclusivePolicy(_seed(rng, seed)), agent_list, speakers_so_far)


def speaker_closure(
    agent_list: Sequence[Any],
    generator_function: Callable[..., Any],
    focal_speaker_index: int | None = None,
    speakers_so_far: Sequence[Any] | None = None,
) -> Callable[[], Any]:
    """A no-argument callable returning successive speakers (helper: docs/design.md, "The conversation API")."""
    agent_names(agent_list)
    if not callable(generator_function):
        raise ConversationValueError("generator_function must be callable")
    history = list(speakers_so_far or [])

    def next_speaker() -> Any:
        speaker = generator_function(
            agent_list=agent_list,
            speakers_so_far=history,
            focal_speaker_index=focal_speaker_index,
        )
        history.append(speaker)
        return speaker

    return next_speaker
