"""The turn-kind handlers, keyed by ``TurnKind``: the one place the engine learns what kinds of
turns there are.

``HANDLERS`` is in claim order: a new turn is of the first kind whose handler claims it (a context
summary before anything else, then a coordinator's drafts, a coordinator's pick, and an agent
speaking, which is always due). An open turn is resumed and a reply committed by the handler of
the turn's stored kind. Adding a kind is one module (a ``TurnHandler``) and one line here."""

from __future__ import annotations

from typing import Any

from conversation.rooms.engine.kinds.base import ClaimContext, TurnHandler
from conversation.rooms.engine.kinds.candidates import CandidatesTurn
from conversation.rooms.engine.kinds.pick import PickTurn
from conversation.rooms.engine.kinds.speak import SpeakTurn
from conversation.rooms.engine.kinds.summary import SummaryTurn
from conversation.rooms.engine.records import Plan
from conversation.vocabulary import TurnKind, turn_kind_of

HANDLERS: dict[TurnKind, TurnHandler] = {
    handler.kind: handler for handler in (SummaryTurn(), CandidatesTurn(), PickTurn(), SpeakTurn())
}


def handler_of(turn: Any) -> TurnHandler:
    """The handler of a stored turn (a row, or its data), by its recorded kind."""
    return HANDLERS[turn_kind_of(turn)]


def claim_new(ctx: ClaimContext) -> Plan:
    """The claim of the room's next turn: the first handler, in claim order, whose turn is due."""
    for handler in HANDLERS.values():
        plan = handler.claim(ctx)
        if plan is not None:
            return plan
    raise AssertionError("no turn kind claimed the turn (SPEAK is always due)")


__all__ = [
    "HANDLERS",
    "CandidatesTurn",
    "ClaimContext",
    "PickTurn",
    "SpeakTurn",
    "SummaryTurn",
    "TurnHandler",
    "claim_new",
    "handler_of",
]
