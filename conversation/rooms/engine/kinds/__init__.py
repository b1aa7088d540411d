"""The turn-kind handlers, keyed by ``TurnKind``: the one place the engine learns what kinds of
turns there are.

``HANDLERS`` is in claim order: a new turn is of the first kind whose handler claims it (a context
summary before anything else, then a coordinator's drafts, a coordinator's pick, an agent's
hand in a room with agent rules, and an agent speaking, which is always due). An open turn is resumed and a reply committed by the handler of
the turn's stored kind, and a stored turn is shown to people by it (``show``, ``shown``). Adding a
kind is one module (a ``TurnHandler``), one line here, and its member in the vocabulary with
what a finished turn of it reads as (``vocabulary.log``)."""

from conversation.rooms.engine.kinds.base import ClaimContext, TurnHandler
from conversation.rooms.engine.kinds.candidates import CandidatesTurn
from conversation.rooms.engine.kinds.hand import HandTurn
from conversation.rooms.engine.kinds.pick import PickTurn
from conversation.rooms.engine.kinds.registry import (
    HANDLERS,
    claim_new,
    handler_of,
    may_stream,
    shown,
)
from conversation.rooms.engine.kinds.showing import Form, Shown
from conversation.rooms.engine.kinds.speak import SpeakTurn
from conversation.rooms.engine.kinds.summary import SummaryTurn

__all__ = [
    "HANDLERS",
    "CandidatesTurn",
    "ClaimContext",
    "Form",
    "HandTurn",
    "PickTurn",
    "Shown",
    "SpeakTurn",
    "SummaryTurn",
    "TurnHandler",
    "claim_new",
    "handler_of",
    "may_stream",
    "shown",
]
