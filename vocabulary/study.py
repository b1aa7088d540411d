"""The words of a study's life: where a participant is (``ParticipantStage``), how they left
(``ExitStatus``), the statuses of a study and of its groups, and what the study's log records
(``StudyEventKind``); with the one table of the moves a participant may make
(``STAGE_TRANSITIONS``) and the one table of what absence at each stage makes of them
(``ABSENCE_EXITS``).

Stored as plain strings (``StrEnum``s equal their values), so a row written before these enums
existed reads the same. Every write of a participant's stage is checked against the table
(``storage.studies.participants.check_move``); everything above storage compares against these
members, never against the strings.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from vocabulary.words import FINAL_ROOM_STATUSES, RoomStatus


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
    ABANDONED = "abandoned"
    """Away past the study's absence limit before taking part (at the consent or the
    pre-survey)."""
    UNFINISHED = "unfinished"
    """Took part in the conversation, then was away past the absence limit at the post-survey."""
    FAILED_CHECK = "failed_check"
    """Failed a comprehension check (out of attempts) or an attention check whose rule sends
    the person home (its own code: Prolific pays failed attention checks apart)."""
    WITHDRAWN = "withdrawn"
    """Withdrew from the study (from their page, or the researcher for them): their data were
    deleted, and later exports and packages leave them out (issue 34)."""


class StudyStatus(StrEnum):
    """Whether a study takes new people."""

    OPEN = "open"
    LOCKED = "locked"
    CLOSED = "closed"


class GroupStatus(StrEnum):
    """A group's conversation: running, or over (its people moved on)."""

    RUNNING = "running"
    ENDED = "ended"


class SeatHolder(StrEnum):
    """Who holds a group's seat when no participant does (a group's ``seats`` map a seat to a
    participant id, or to one of these)."""

    AGENT = "agent"
    """The seat's stand-in agent plays it (a lobby timeout filled with agents, or a person
    left and the study's rule gave the seat to its agent)."""
    LEFT = "left"
    """Its person left and nobody took the seat."""


class StudyEventKind(StrEnum):
    """What an entry of a study's log records. A participant's exit is recorded under its exit
    status's word (:func:`exit_event`)."""

    JOINED = "joined"
    CONSENTED = "consented"
    ANSWERED = "answered"
    ASSIGNED = "assigned"
    FILLED_WITH_AGENTS = "filled_with_agents"
    """A group formed after the lobby's timeout, its empty seats played by their agents."""
    SEAT_TAKEN_BY_AGENT = "seat_taken_by_agent"
    SEAT_LEFT = "seat_left"
    ROOM_PAUSED = "room_paused"
    ROOM_STOPPED = "room_stopped"
    ROOM_ENDED = "room_ended"
    TURN_TIMEOUT = "turn_timeout"
    HELP = "help"
    """A help message, either way between a participant and the researcher."""
    HELP_READ = "help_read"
    """The researcher read a participant's help messages (up to an event id)."""
    LOCKED = "locked"
    UNLOCKED = "unlocked"
    CLOSED = "closed"
    CAP = "cap"
    DEFINITION_CHANGED = "definition_changed"
    # The study's rules (issue 33): checks, the room's pace, its turns and its idle time.
    CHECK_ATTEMPT = "check_attempt"
    """A try at a survey's comprehension check: the answers, right or wrong, attempts left."""
    ATTENTION_CHECK = "attention_check"
    """An attention check put to a person in the room (sent from the monitor, or scheduled)."""
    ATTENTION_ANSWERED = "attention_answered"
    ATTENTION_MISSED = "attention_missed"
    """An attention check not answered within its time limit."""
    LEFT_ROOM = "left_room"
    """A person left the room once its minimums were met (on to the post-survey)."""
    TURN_ORDER = "turn_order"
    """An ordered room's cycle of human turns, drawn from a recorded seed."""
    IDLE_WAKE = "idle_wake"
    """Nobody spoke for the idle rule's time: its agent was asked to speak."""
    IDLE_END = "idle_end"
    """Nobody spoke for the idle rule's end time: the room ended."""
    AMENDED = "amended"
    """A preregistered study's frozen fields changed, with a reason (``study_amendments``)."""
    DATA_DELETED = "data_deleted"
    """A withdrawn person's data were deleted: who asked, the study's rule and the counts;
    never the content."""
    # A participant's exits, one per exit status.
    COMPLETED = "completed"
    DECLINED = "declined"
    LOBBY_TIMEOUT = "lobby_timeout"
    DROPPED = "dropped"
    REMOVED = "removed"
    ERROR = "error"
    ABANDONED = "abandoned"
    UNFINISHED = "unfinished"
    FAILED_CHECK = "failed_check"
    WITHDRAWN = "withdrawn"
    """A withdrawal: who and when and what was deleted, never the content (also for a person
    who had already left: their exit status stays)."""


def exit_event(status: ExitStatus) -> StudyEventKind:
    """The study log's kind of a participant's exit with ``status``."""
    return StudyEventKind(status.value)


PARTICIPANT_STAGES: Final = frozenset(ParticipantStage)
EXIT_STATUSES: Final = tuple(ExitStatus)
"""Every exit status, in the order the definition's ``exit.codes`` lists them."""
LEFT_PARTWAY: Final = frozenset({ExitStatus.ABANDONED, ExitStatus.UNFINISHED})
"""The exit statuses added for absence at every stage (issue 31): a definition written before
them may leave their codes out, and they take ``dropped``'s."""
RULE_EXITS: Final = frozenset({ExitStatus.FAILED_CHECK})
"""The exit statuses only a study rule produces (a check): a definition names their codes when
it has such a rule, and only then."""
CODE_OPTIONAL: Final = frozenset({ExitStatus.WITHDRAWN})
"""Exit statuses a definition may give no code: a person who withdraws is owed no completion
code (on Prolific they return the submission); without one their exit shows none."""
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


ENDED_ROOM_STATUSES: Final = frozenset(FINAL_ROOM_STATUSES - {RoomStatus.SETTLED})
"""A study group's room in one of these takes no more messages: its conversation is over
(a settled room only waits for the next person's message)."""
AWAITING_PEOPLE_STATUSES: Final = frozenset({RoomStatus.SETTLED, RoomStatus.IDLE})
"""A study group's room in one of these waits for its people (the agents have answered)."""

ABSENCE_EXITS: Final[dict[ParticipantStage, ExitStatus]] = {
    ParticipantStage.CONSENT: ExitStatus.ABANDONED,
    ParticipantStage.PRE_SURVEY: ExitStatus.ABANDONED,
    ParticipantStage.LOBBY: ExitStatus.DROPPED,
    ParticipantStage.ROOM: ExitStatus.DROPPED,
    ParticipantStage.POST_SURVEY: ExitStatus.UNFINISHED,
}
"""Every stage's absence rule: a person away past the study's absence limit at that stage
leaves with this exit status (and its code)."""


def may_move(current: str, to: str) -> bool:
    """Whether a participant at ``current`` may move to ``to`` (staying put is not a move)."""
    try:
        return ParticipantStage(to) in STAGE_TRANSITIONS[ParticipantStage(current)]
    except ValueError:
        return False


__all__ = [
    "ABSENCE_EXITS",
    "ACTIVE_STAGES",
    "AWAITING_PEOPLE_STATUSES",
    "CODE_OPTIONAL",
    "ENDED_ROOM_STATUSES",
    "EXIT_STATUSES",
    "GROUP_STATUSES",
    "LEFT_PARTWAY",
    "PARTICIPANT_STAGES",
    "RULE_EXITS",
    "STAGE_TRANSITIONS",
    "STUDY_STATUSES",
    "SURVEY_STAGES",
    "ExitStatus",
    "GroupStatus",
    "ParticipantStage",
    "SeatHolder",
    "StudyEventKind",
    "StudyStatus",
    "exit_event",
    "may_move",
]
