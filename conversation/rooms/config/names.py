"""Who may speak in a room: the name rule of agents and people, the names the room keeps for its
own notices, and a room's name and place in an experiment (checked before anything else).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.text.limits import MAX_CONDITION_CHARS, MAX_NAME_CHARS, check_text

#: Agent and human names: a letter or digit, then letters, digits, ``_ - .`` (the @-mention
#: grammar, so every agent can be addressed), at most 64 characters.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-.]{0,63}")
#: Speaker names of the room's own notices (``room``) and of imported system messages
#: (``system``): no agent and no person may use them, in any case.
RESERVED_SPEAKERS = frozenset({"room", "system"})


def check_name(value: Any, field_name: str) -> str:
    """A safe agent or human name (see ``NAME_PATTERN``), or ``ConversationValueError``."""
    if not isinstance(value, str) or len(value) > 64 or not NAME_PATTERN.fullmatch(value):
        shown = repr(value[:70]) if isinstance(value, str) else _clip(value)
        raise ConversationValueError(
            f"{field_name} {shown} is not a valid name: use 1-64 letters, digits, '_', '-' or "
            "'.', starting with a letter or digit (no spaces, so it can be @-mentioned)"
        )
    return value


def reserved_speaker(name: str, roster: Iterable[str] = ()) -> str | None:
    """What ``name`` would impersonate: a notice name or an agent of ``roster`` (compared
    without case: ``alice`` reads as ``Alice``); None when it is free for a person."""
    folded = name.casefold()
    if folded in RESERVED_SPEAKERS:
        return f"{name!r} is the name the room's own notices use"
    for agent in roster:
        if agent.casefold() == folded:
            return f"{name!r} is the name of the agent {agent!r} of this room"
    return None


def check_placement(
    name: Any, experiment_id: Any = None, condition: Any = None, replicate: Any = None
) -> str:
    """A room's name and its place in an experiment, checked before anything else is looked at
    (a 50 MB name is refused by its length)."""
    check_text(name, "name", MAX_NAME_CHARS, one_line=True)
    if experiment_id is not None and (
        not isinstance(experiment_id, int) or isinstance(experiment_id, bool) or experiment_id < 1
    ):
        raise ConversationValueError(
            f"experiment_id must be a positive integer (an experiment's id) or None, got "
            f"{type(experiment_id).__name__}"
        )
    if condition is not None:
        check_text(condition, "condition", MAX_CONDITION_CHARS, one_line=True)
    if replicate is not None and (
        not isinstance(replicate, int) or isinstance(replicate, bool) or not 1 <= replicate <= 10**6
    ):
        raise ConversationValueError("replicate must be a positive integer or None")
    return name


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["NAME_PATTERN", "RESERVED_SPEAKERS", "check_name", "check_placement", "reserved_speaker"]
