"""The one vocabulary of the project: the words a room's and a study's life are told in.

A package below both ``storage`` and ``conversation`` (it imports neither, nor anything that
touches a database, a model or a page): storage validates what it writes against these words, and
everything above compares against the members, never against the strings.

- ``words``: room statuses, event kinds, turn states, turn and notice kinds, experiment and
  analysis statuses, with their named sets and the turn lifecycle;
- ``study``: a participant's stages and exit statuses, a study's and a group's statuses, and the
  one table of a participant's moves.
"""

from vocabulary.study import (
    ACTIVE_STAGES,
    EXIT_STATUSES,
    GROUP_STATUSES,
    PARTICIPANT_STAGES,
    STAGE_TRANSITIONS,
    STUDY_STATUSES,
    SURVEY_STAGES,
    ExitStatus,
    GroupStatus,
    ParticipantStage,
    StudyStatus,
    may_move,
)
from vocabulary.words import (
    ANALYSIS_STATUSES,
    CONSUMED_TURN_STATES,
    EVENT_KINDS,
    EXPERIMENT_STATUSES,
    FINAL_ROOM_STATUSES,
    FINAL_TURN_STATES,
    KIND_KEY,
    OPEN_ANSWER_STATES,
    OPEN_ROOM_STATUSES,
    OPEN_TURN_STATES,
    REOPENED_BY_A_MESSAGE,
    ROOM_STATUSES,
    RUNNABLE_ROOM_STATUSES,
    TURN_KINDS,
    TURN_STATES,
    TURN_TRANSITIONS,
    AnalysisStatus,
    AnswerState,
    EventKind,
    ExperimentStatus,
    NoticeKind,
    RoomStatus,
    TurnKind,
    TurnState,
    kind_of,
    turn_kind_of,
)

__all__ = [
    "ACTIVE_STAGES",
    "ANALYSIS_STATUSES",
    "CONSUMED_TURN_STATES",
    "EVENT_KINDS",
    "EXIT_STATUSES",
    "EXPERIMENT_STATUSES",
    "FINAL_ROOM_STATUSES",
    "FINAL_TURN_STATES",
    "GROUP_STATUSES",
    "KIND_KEY",
    "OPEN_ANSWER_STATES",
    "OPEN_ROOM_STATUSES",
    "OPEN_TURN_STATES",
    "PARTICIPANT_STAGES",
    "REOPENED_BY_A_MESSAGE",
    "ROOM_STATUSES",
    "RUNNABLE_ROOM_STATUSES",
    "STAGE_TRANSITIONS",
    "STUDY_STATUSES",
    "SURVEY_STAGES",
    "TURN_KINDS",
    "TURN_STATES",
    "TURN_TRANSITIONS",
    "AnalysisStatus",
    "AnswerState",
    "EventKind",
    "ExitStatus",
    "ExperimentStatus",
    "GroupStatus",
    "NoticeKind",
    "ParticipantStage",
    "RoomStatus",
    "StudyStatus",
    "TurnKind",
    "TurnState",
    "kind_of",
    "may_move",
    "turn_kind_of",
]
