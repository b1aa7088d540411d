"""Conversation rooms: multi-agent conversations on EDSL, with people in the loop.

The public API is re-exported here; see README.md and docs/architecture.md.
"""

from .exceptions import (
    ConversationError,
    ConversationStateError,
    ConversationValueError,
    ModelCallError,
    RequestConflictError,
)

__all__ = [
    "ConversationError",
    "ConversationStateError",
    "ConversationValueError",
    "ModelCallError",
    "RequestConflictError",
]
