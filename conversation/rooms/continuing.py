"""Will the agents answer a new message? And continuing a room past its turn limit.

A person's message re-opens an ended room, but a room-wide cap that only grows (a limit on agent
turns, a budget) still holds: the room would end again at once and nobody would answer. So the
question is asked before the message is sent (:func:`no_answer_reason`, pure over the log: the
room's rules evaluated as if the message were already posted), and a person who wants answers
raises the turn limit by ``N`` more turns (:func:`continued_termination`), stored as a settings
change (a new configuration version) before the message in the same action (``Room.post(...,
continue_turns=N)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.rooms.config import RoomConfig
from conversation.rooms.log import RoomLog, log_view
from conversation.vocabulary import EventKind

#: The most turns one continuation may add (a typo of 10000 should not buy a runaway room).
MAX_CONTINUE_TURNS = 1000


def _posted(rows: Sequence[Any]) -> SimpleNamespace:
    """A stand-in for a person's message at the end of the log (never stored)."""
    return SimpleNamespace(
        seq=(rows[-1].seq if rows else 0) + 1,
        kind=EventKind.HUMAN,
        speaker="a person",
        content="(a new message)",
        round=0,
        state=None,
        visible_to=None,
        data={},
        input_tokens=0,
        output_tokens=0,
        cost=0.0,
    )


def no_answer_reason(config: RoomConfig, rows: Sequence[Any]) -> str | None:
    """Why no agent would answer a message posted now (the stop reason the room would end with
    at once: a turn limit reached, a budget spent), or None when the agents answer. ``rows``: the
    room's stored log, in seq order. An experiment's budget is not read here."""
    if config.budget is not None:
        spent = config.budget.reached(RoomLog(config.names, rows).spent())
        if spent is not None:
            return spent
    condition = config.termination_object()
    if condition is None:
        return None
    decision = condition.evaluate(log_view(config.names, [*rows, _posted(rows)]))
    return None if decision is None else decision.reason


def check_continue_turns(turns: Any) -> int:
    """``turns`` as the number of more agent turns to allow (1 to ``MAX_CONTINUE_TURNS``)."""
    if (
        isinstance(turns, bool)
        or not isinstance(turns, int)
        or not 1 <= turns <= MAX_CONTINUE_TURNS
    ):
        raise ConversationValueError(
            f"continue_turns={turns!r} must be a whole number from 1 to {MAX_CONTINUE_TURNS}: "
            "how many more agent turns the room may take"
        )
    return turns


def continued_termination(
    termination: Mapping[str, Any] | None, taken: int, turns: int
) -> dict[str, Any] | None:
    """The stored termination with every turn limit already reached (``max_turns <= taken``,
    the agent turns counted since the resume point) raised to ``taken + turns``; None when no
    limit was reached (nothing to continue)."""
    if not isinstance(termination, Mapping):
        return None
    raised = False

    def walk(node: Any) -> Any:
        nonlocal raised
        if isinstance(node, Mapping):
            copy = {key: walk(value) for key, value in node.items()}
            limit = copy.get("max_turns")
            if copy.get("kind") == "max_turns" and isinstance(limit, int) and limit <= taken:
                copy["max_turns"] = taken + turns
                raised = True
            return copy
        if isinstance(node, list):
            return [walk(value) for value in node]
        return node

    new = walk(termination)
    return new if raised else None


def turns_taken(config: RoomConfig, rows: Sequence[Any]) -> int:
    """The agent turns a turn limit counts now (since the resume point; stopped turns not)."""
    return log_view(config.names, rows).agent_turns()


__all__ = [
    "MAX_CONTINUE_TURNS",
    "check_continue_turns",
    "continued_termination",
    "no_answer_reason",
    "turns_taken",
]
