"""The project's exception tree.

Three families, so callers can tell a mistake in their own code from a failure during a run:

- ``ConversationValueError``: bad configuration or input, raised early (also a ``ValueError``).
  Messages name the field, the value and the fix.
- ``ConversationStateError``: an operation that does not fit the current state (stepping a finished
  room, approving a turn that does not wait, a request id reused with different content).
- ``ModelCallError``: a model call failed during a run; it carries the agent and the turn.
- ``StorageUnavailableError``: the database cannot be used right now (transient).
- ``NotFoundError`` (a ``ConversationValueError``): the id names no stored record (a room,
  event, experiment, analysis, rubric ...); ``InUseError`` (a ``ConversationStateError``): a
  worker holds the record; ``StorageFailure``: the database failed an operation in a way no
  other error names.
- ``PermissionDenied``: the signed-in person's role does not allow the act (nothing changed).

Storage raises its own small tree (``storage.errors``); ``conversation.boundary`` is the one
place that translates it into this one.
"""

from __future__ import annotations

from typing import Any


class ConversationError(Exception):
    """Base class of every error this project raises on purpose."""


class ConversationValueError(ConversationError, ValueError):
    """Bad configuration or input (a field, its value, and how to fix it)."""


class ConversationStateError(ConversationError):
    """The operation does not fit the current state of a conversation, room or turn."""


class RequestConflictError(ConversationStateError):
    """A request id was sent again with different content: it names one message or turn only."""


class TurnAlreadyDecided(ConversationStateError):
    """Someone else already decided this turn (two moderators acting on one draft): ``by`` says
    who, ``verb`` what (approve, edit, deny, stop, resume, abandon)."""

    def __init__(self, message: str, *, by: str, verb: str) -> None:
        super().__init__(message)
        self.by = by
        self.verb = verb


class NotFoundError(ConversationValueError):
    """The id names no stored record (a room, event, experiment, analysis, rubric ...): it never
    existed or was deleted."""


class InUseError(ConversationStateError):
    """A worker holds the record right now (a room it drives, an experiment it runs); nothing
    was changed. Stop it first, or try again when it lets go."""


class ImportRejected(ConversationValueError):
    """An import (an export file, a saved chat) was refused as a whole; nothing was stored."""


class StorageUnavailableError(ConversationError):
    """The database cannot be used right now (locked past its busy timeout, the server gone);
    nothing was changed. Trying again later may succeed."""


class StorageFailure(ConversationError):
    """The database failed an operation in a way no other error names (a lease lost, a schema
    newer than this library); the message says what."""


class PermissionDenied(ConversationError, PermissionError):
    """The actor's role does not allow the act (``conversation.access``); nothing was changed.
    ``actor`` is who tried, ``action`` what (an ``Action`` value), ``needed`` the least role."""

    def __init__(self, message: str, *, actor: str, action: str, needed: str) -> None:
        super().__init__(message)
        self.actor = actor
        self.action = action
        self.needed = needed


class ModelCallError(ConversationError):
    """A model call failed, or returned no usable text, during a turn.

    ``agent`` is the speaker's name, ``turn`` the turn index; ``cause`` (also ``__cause__``) is the
    provider's own exception when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        agent: str | None = None,
        turn: int | None = None,
        code: str | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(message)
        self.agent = agent
        self.turn = turn
        self.code = code
        self.cause = cause

    def to_dict(self) -> dict[str, Any]:
        """The ``{type, code, message}`` shape stored on a failed turn."""
        return {"type": type(self).__name__, "code": self.code, "message": str(self)}


__all__ = [
    "ConversationError",
    "ConversationValueError",
    "ConversationStateError",
    "RequestConflictError",
    "TurnAlreadyDecided",
    "ImportRejected",
    "StorageUnavailableError",
    "StorageFailure",
    "NotFoundError",
    "InUseError",
    "ModelCallError",
    "PermissionDenied",
]
