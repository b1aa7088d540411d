"""Studies with real participants (docs/studies.md): a study is an experiment whose rooms have
human seats next to agent seats; people join by a link, consent, wait in a lobby, are assigned a
condition and a seat by a recorded randomisation, chat, and leave with a completion code.

``definition`` and ``schema``: the study file at the door; ``cli``: ``python -m
conversation.study validate|launch``.
"""

from conversation.study.definition import (
    StudyDefinition,
    definition_from_dict,
    load_definition,
    read_definition,
)
from conversation.study.errors import NotAParticipant, StudyRefused, TooFast, WrongStage
from conversation.study.schema import DEFINITION_VERSION, EXIT_STATUSES

__all__ = [
    "DEFINITION_VERSION",
    "EXIT_STATUSES",
    "NotAParticipant",
    "StudyDefinition",
    "StudyRefused",
    "TooFast",
    "WrongStage",
    "definition_from_dict",
    "load_definition",
    "read_definition",
]
