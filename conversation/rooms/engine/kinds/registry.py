"""The registry of turn-kind handlers, in claim order (see the package's docstring)."""

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


__all__ = ["HANDLERS", "claim_new", "handler_of"]
