"""The study's refusals: typed, with messages written for the participant who reads them.

All are ``ConversationValueError`` subclasses (a caller that knows nothing of studies still
catches them); the pages show ``str(error)`` as it is.
"""

from __future__ import annotations

from typing import Any

import storage
from conversation.exceptions import ConversationValueError

_REFUSALS = {
    "unknown": "This study link is not valid. Please check the link you were given.",
    "locked": "This study is not taking participants right now. Please try again later.",
    "full": "This study is full. Thank you for your interest!",
    "closed": "This study has ended. Thank you for your interest!",
}


class StudyRefused(ConversationValueError):
    """``join`` refused: ``reason`` is ``unknown``, ``locked``, ``full`` or ``closed``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(_REFUSALS[reason])


class NotAParticipant(ConversationValueError):
    """A token that is not a participant's (forged, mistyped, or of a deleted study)."""

    def __init__(self) -> None:
        super().__init__("This participant link is not valid. Please use the link you were given.")


class TooFast(ConversationValueError):
    """A participant posted more than the study's rate allows; ``retry_after`` in seconds."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = max(0.0, float(retry_after))
        super().__init__(
            f"You are sending messages too quickly; please wait {self.retry_after:.0f} s."
        )


class WrongStage(ConversationValueError):
    """An act that does not fit where the participant is (posting from the lobby, say)."""

    def __init__(self, stage: str, act: str) -> None:
        self.stage = stage
        super().__init__(f"You cannot {act} now (you are at the {stage.replace('_', ' ')} step).")


class NotNow(ConversationValueError):
    """An act the study's rules do not allow yet, or any more (leaving before the minimum
    time, posting when it is another seat's turn or past the most messages): the message says
    why, in the participant's words."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _not_a_participant(_: Any) -> NotAParticipant:
    return NotAParticipant()


def _unknown_study(_: Any) -> StudyRefused:
    return StudyRefused("unknown")


def _too_fast(limited: Any) -> TooFast:
    return TooFast(limited.wait)


#: The storage errors that are refusals to a participant, for ``conversation.boundary.translated``: a
#: token nobody holds, a study code nobody has, a post over the participant's rate.
REFUSALS: dict[type[storage.StorageError], Any] = {
    storage.ParticipantNotFound: _not_a_participant,
    storage.StudyNotFound: _unknown_study,
    storage.RateLimited: _too_fast,
}

__all__ = ["REFUSALS", "NotAParticipant", "NotNow", "StudyRefused", "TooFast", "WrongStage"]
