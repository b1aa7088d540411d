"""The registry of turn-kind handlers, in claim order (see the package's docstring)."""

from __future__ import annotations

from typing import Any

from conversation.rooms.engine.kinds.base import ClaimContext, TurnHandler
from conversation.rooms.engine.kinds.candidates import CandidatesTurn
from conversation.rooms.engine.kinds.hand import HandTurn
from conversation.rooms.engine.kinds.pick import PickTurn
from conversation.rooms.engine.kinds.showing import Shown, human_shown, notice_shown
from conversation.rooms.engine.kinds.speak import SpeakTurn
from conversation.rooms.engine.kinds.summary import SummaryTurn
from conversation.rooms.engine.records import Plan
from conversation.vocabulary import (
    AgentTurn,
    HumanMessage,
    LogEntry,
    Notice,
    TurnKind,
    turn_kind_of,
)

HANDLERS: dict[TurnKind, TurnHandler] = {
    handler.kind: handler
    for handler in (SummaryTurn(), CandidatesTurn(), PickTurn(), HandTurn(), SpeakTurn())
}


def shown(entry: LogEntry) -> Shown:
    """How a log entry is shown to people: a turn by its kind's handler, a notice that records
    a turn kind (a pick) by that kind's, a person's message and any other notice as such."""
    if isinstance(entry, HumanMessage):
        return human_shown(entry)
    if isinstance(entry, Notice):
        if isinstance(entry.notice, TurnKind):
            return HANDLERS[entry.notice].show_notice(entry)
        return notice_shown(entry)
    return HANDLERS[entry.turn_kind].show(entry)


def may_stream(entry: LogEntry) -> bool:
    """Whether a running turn's reply may stream to the page (its kind's handler says)."""
    return isinstance(entry, AgentTurn) and HANDLERS[entry.turn_kind].may_stream


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


__all__ = ["HANDLERS", "claim_new", "handler_of", "may_stream", "shown"]
