"""What a room's agents may do when people are in the room (the room setting ``agent_rules``,
issue 33), one rule read from the log at each plan, like breakpoints:

- ``max_replies``: an agent with that many messages in the room says no more;
- ``no_self_reply``: an agent never answers its own message (no self-triggered loops): it is
  not due when the latest message is its own;
- ``one_per_message``: one agent answers each person's message, the first that claims it (its
  message, not a pass): once an agent has spoken since the person's message, none is due;
- ``hand_raising``: before it speaks an agent decides whether to (the turn kind
  ``TurnKind.HAND``: ``engine/kinds/hand.py``); one that says no passes, with its decision.

The planner still plans with the whole roster (so an activity stays the same activity): when
it names an agent one of these rules holds, :func:`held_because` says why, and that turn is a
pass with the reason and no model call (``TurnKind.HAND``). Passes consume turns, so the room
moves on to the next agent, or settles and waits for the next person's message. Pure: a
function of the roster, the setting and the transcript.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conversation.planning.events import RoomEvent
from conversation.rooms.config import agent_rules_of

#: The kind of a transcript event that is a message (or a pass), as ``planning.events`` has it.
MESSAGE = "message"


def held_because(
    names: Sequence[str],
    setting: Mapping[str, Any] | None,
    events: Sequence[RoomEvent],
    speaker: str,
) -> str | None:
    """Why the room's rules keep ``speaker``'s hand down now (the reason stored with its
    pass), or None: it may speak. ``names``: the room's agents (a speaker not among them is a
    person); ``events``: the room's transcript."""
    if not setting:
        return None
    rules = agent_rules_of(setting)
    agents = set(names)
    messages = [e for e in events if e.kind == MESSAGE and not e.passed]
    if rules.no_self_reply and messages and messages[-1].speaker == speaker:
        return "its own message is the latest (no reply to itself)"
    if rules.max_replies is not None:
        said = sum(1 for e in messages if e.speaker == speaker)
        if said >= rules.max_replies:
            return f"it has said its {rules.max_replies} messages (max_replies)"
    if rules.one_per_message:
        for event in reversed(messages):
            if event.speaker not in agents:
                break
            return f"{event.speaker} answered the person's message (one agent per message)"
    return None


__all__ = ["held_because"]
