"""Conversation rooms: multi-agent conversations on EDSL, with people in the loop.

The public API is re-exported here; see README.md and docs/architecture.md.
"""

from .batch import ConversationList
from .dialogue import Conversation
from .exceptions import (
    ConversationError,
    ConversationStateError,
    ConversationValueError,
    ModelCallError,
    RequestConflictError,
)
from .statements import AgentStatement, AgentStatements
from .strategies import (
    FocalSpeakerStrategy,
    RandomInclusiveStrategy,
    RandomSpeakerStrategy,
    RoundRobinStrategy,
    SpeakerStrategy,
)

__all__ = [
    "AgentStatement",
    "AgentStatements",
    "Conversation",
    "ConversationError",
    "ConversationList",
    "ConversationStateError",
    "ConversationValueError",
    "FocalSpeakerStrategy",
    "ModelCallError",
    "RandomInclusiveStrategy",
    "RandomSpeakerStrategy",
    "RequestConflictError",
    "RoundRobinStrategy",
    "SpeakerStrategy",
]
