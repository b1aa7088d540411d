"""Names for the agents of a conversation-API agent list, so turn policies can work on names.

Elements of an agent list may be EDSL ``Agent`` objects (named by ``.name``) or plain strings.
An agent without a name is known by its position, ``"#<index>"``: the legacy generator API never
required names, and a positional key keeps such lists usable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.planning.events import check_roster

__all__ = ["agent_names", "history_names", "speaker_name"]


def speaker_name(agent: Any) -> str | None:
    """An element's own name: the string itself, or a non-empty ``.name``; None otherwise."""
    if isinstance(agent, str):
        return agent
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else None


def agent_names(agent_list: Sequence[Any]) -> tuple[str, ...]:
    """One unique name per element, in order; a non-empty list is required."""
    if agent_list is None or len(agent_list) == 0:
        raise ConversationValueError(
            "agent_list must contain at least one agent; pass a non-empty list or AgentList"
        )
    names = [speaker_name(agent) or f"#{index}" for index, agent in enumerate(agent_list)]
    return check_roster(names)


def history_names(
    agent_list: Sequence[Any], names: Sequence[str], speakers_so_far: Sequence[Any]
) -> list[str]:
    """``speakers_so_far`` as roster names; entries not in ``agent_list`` are dropped.

    An entry matches an element by identity first (the legacy API appends the element itself),
    then by name, so a history of names (e.g. restored from a dict) works as well.
    """
    by_identity = {id(agent): name for agent, name in zip(agent_list, names, strict=True)}
    known = set(names)
    result: list[str] = []
    for speaker in speakers_so_far:
        name = by_identity.get(id(speaker))
        if name is None:
            own = speaker_name(speaker)
            name = own if own in known else None
        if name is not None:
            result.append(name)
    return result
