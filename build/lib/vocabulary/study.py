"""The words of a study's life: where a participant is (``ParticipantStage``), how they left
(``ExitStatus``), and the statuses of a study and of its groups, with the one table of the moves a
participant may make (``STAGE_TRANSITIONS``).

Stored as plain strings (``StrEnum``s equal their values), so a row written before these enums
existed reads the same. Every write of a participant's stage is checked against the table
(:func:`check_stage_move`); everything above storage compares against these members, never
against the strings.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class ParticipantStage(StrEnum):
    """Where a participant is on their path through a study, in order."""

    CONSENT = "consent"
    """Joined by the link; reading the consent text."""
    PRE_SURVEY = "pre_survey"
    """Consented; answering the questions before the conversation."""
    LOBBY = "lobby"
    """Waiting to be matched into a group."""
    ROOM = "room"
    """In their group's conversation, in their seat."""
    POST_SURVEY = "post_survey"
    """The conversation ended; answering the last questions."""
    EXIT = "exit"
    """Left, with an exit status and its completion code."""


class ExitStatus(StrEnum):
    """How a participant left; each has its own completion code in the study's definition."""

    COMPLETED = "completed"
    """Finished the whole path."""
    DECLINED = "declined"
    """Did not consent."""
    LOBBY_TIMEOUT = "lobby_timeout"
    """No group could be formed in time (or the study was full)."""
    DROPPED = "dropped"
    """Away from the page past the study's absence limit."""
    REMOVED = "removed"
    """The researcher ended their participation."""
    ERROR = "error"
    """Their conversation failed on the study's side."""


class StudyStatus(StrEnum):
    """Whether a study takes new people."""

    OPEN = "open"
    LOCKED = "locked"
    CLOSED = "closed"


class GroupStatus(StrEnum):
    """A group's conversation: running, or over (its people moved on)."""

    RUNNING = "running"
    ENDED = "ended"


PARTICIPANT_STAGES: Final = frozenset(ParticipantStage)
EXIT_STATUSES: Final = tuple(ExitStatus)
"""Every exit status, in the order the definition's ``exit.codes`` lists them."""
STUDY_STATUSES: Final = frozenset(StudyStatus)
GROUP_STATUSES: Final = frozenset(GroupStatus)
SURVEY_STAGES: Final = frozenset({ParticipantStage.PRE_SURVEY, ParticipantStage.POST_SURVEY})
"""The stages where a participant answers questions."""
ACTIVE_STAGES: Final = frozenset(PARTICIPANT_STAGES - {ParticipantStage.EXIT})
"""Every stage but the exit: the participant is still on their path."""

STAGE_TRANSITIONS: Final[dict[ParticipantStage, frozenset[ParticipantStage]]] = {
    ParticipantStage.CONSENT: frozenset(
        {ParticipantStage.PRE_SURVEY, ParticipantStage.LOBBY, ParticipantStage.EXIT}
    ),
    ParticipantStage.PRE_SURVEY: frozenset({ParticipantStage.LOBBY, ParticipantStage.EXIT}),
    ParticipantStage.LOBBY: frozenset({ParticipantStage.ROOM, ParticipantStage.EXIT}),
    ParticipantStage.ROOM: frozenset({ParticipantStage.POST_SURVEY, ParticipantStage.EXIT}),
    ParticipantStage.POST_SURVEY: frozenset({ParticipantStage.EXIT}),
    ParticipantStage.EXIT: frozenset(),
}
"""The moves a participant may make, ``from -> {to}``. Consent leads to the pre-survey (or the
lobby when the study has none); a person may leave (``exit``) from any stage; nobody comes back
from the exit."""


def may_move(current: str, to: str) -> bool:
    """Whether a participant at ``current`` may move to ``to`` (staying put is not a move)."""
    try:
        return ParticipantStage(to) in STAGE_TRANSITIONS[ParticipantStage(current)]
    except ValueError:
        return False


__all__ = [
    "ACTIVE_STAGES",
    "EXIT_STATUSES",
    "GROUP_STATUSES",
    "PARTICIPANT_STAGES",
    "STAGE_TRANSITIONS",
    "STUDY_STATUSES",
    "SURVEY_STAGES",
    "ExitStatus",
    "GroupStatus",
    "ParticipantStage",
    "StudyStatus",
    "may_move",
]
