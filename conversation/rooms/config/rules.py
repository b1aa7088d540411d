"""What a room's behaviour is stored as, and the checks that it restores: a planner as data,
a termination condition and a context policy as data, breakpoints on the roster, a prompt template
tried with representative values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conversation.context.window import ContextPolicy
from conversation.exceptions import ConversationValueError
from conversation.planning.planner import RoundRobinRoomPlanner
from conversation.planning.registry import planner_from_dict
from conversation.text.limits import MAX_MESSAGE_CHARS

#: Variables a room's prompt template may use.
ROOM_PROMPT_VARIABLES = (
    "speaker_name",
    "conversation",
    "agent_names",
    "current_turn",
    "max_turns",
    "turns_left",
    "feedback",
    "activity_opener",
    "addressee",
)


def planner_to_dict(planner: Any) -> dict[str, Any]:
    """A built-in planner (or conversation-API strategy) as storable data; others are rejected."""
    from conversation.dialogue.strategies import SpeakerStrategy

    if planner is None:
        planner = RoundRobinRoomPlanner()
    if isinstance(planner, SpeakerStrategy):
        planner = planner._policy
    to_dict = getattr(planner, "to_dict", None)
    if not callable(to_dict):
        raise ConversationValueError(
            f"planner {type(planner).__name__} cannot be stored with the room; use a built-in "
            "planner such as RoundRobinRoomPlanner() or AddressedPolicy()"
        )
    data = to_dict()
    planner_from_dict(data)  # proves it can be restored
    return data


def storable_rules(termination: Any, context: Any) -> tuple[Any, Any]:
    """A termination condition and a context policy as the data a room stores; a plain
    function as a condition is refused (it cannot be stored with the room)."""
    if termination is not None and not isinstance(termination, Mapping):
        to_dict = getattr(termination, "to_dict", None)
        if not callable(to_dict):
            raise ConversationValueError(
                "termination must be a condition from conversation.termination.conditions "
                "(combine them with | and &); a plain function cannot be stored with the room"
            )
        termination = to_dict()
    if isinstance(context, ContextPolicy):
        context = context.to_dict()
    return termination, context


#: When a breakpoint pauses a room: before the agent speaks, or after each of its turns.
BREAKPOINT_KINDS = ("before", "after")


def checked_breakpoints(value: Any, roster: tuple[str, ...]) -> dict[str, list[str]] | None:
    """``{"before": [...], "after": [...]}`` (names of the roster, each once), or None when no
    breakpoint is set; ``ConversationValueError`` naming the problem otherwise."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConversationValueError(
            f"breakpoints must be a dict like {{'before': ['Ana'], 'after': ['Bo']}}, got {value!r}"
        )
    unknown = sorted(set(value) - set(BREAKPOINT_KINDS))
    if unknown:
        raise ConversationValueError(
            f"breakpoints has unknown key(s) {unknown}; use 'before' and/or 'after'"
        )
    checked: dict[str, list[str]] = {}
    for when in BREAKPOINT_KINDS:
        names = value.get(when) or []
        if isinstance(names, str) or not isinstance(names, list | tuple):
            raise ConversationValueError(
                f"breakpoints[{when!r}] must be a list of agent names, got {names!r}"
            )
        strangers = [n for n in names if n not in roster]
        if strangers:
            raise ConversationValueError(
                f"breakpoints[{when!r}] names {strangers}, not on the roster {list(roster)}; "
                "use agent names of this room"
            )
        checked[when] = list(dict.fromkeys(names))
    if not any(checked.values()):
        return None
    return checked


def trial_values(names: tuple[str, ...], max_turns: int | None) -> list[dict[str, Any]]:
    """Representative values of a room prompt's variables: a first turn answering a message of
    the largest size, and a later turn with feedback, an addressee and no opener."""
    longest = "x" * MAX_MESSAGE_CHARS
    last = max_turns - 1 if max_turns else 7
    return [
        {
            "speaker_name": names[0],
            "conversation": '{"speaker": "user", "text": "' + longest + '"}',
            "agent_names": list(names),
            "current_turn": 0,
            "max_turns": max_turns,
            "turns_left": max_turns,
            "feedback": None,
            "activity_opener": longest,
            "addressee": None,
        },
        {
            "speaker_name": names[-1],
            "conversation": '{"speaker": "user", "text": "Hello"}\n{"speaker": "'
            + names[0]
            + '", "text": "Hi"}',
            "agent_names": list(names),
            "current_turn": max(last, 0),
            "max_turns": max_turns,
            "turns_left": 1 if max_turns else None,
            "feedback": "Your last draft was not approved: keep it short.",
            "activity_opener": None,
            "addressee": names[0],
        },
    ]


__all__ = [
    "BREAKPOINT_KINDS",
    "ROOM_PROMPT_VARIABLES",
    "checked_breakpoints",
    "planner_to_dict",
    "storable_rules",
    "trial_values",
]
