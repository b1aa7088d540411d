"""The study file at the door: its schema (``schema``), loading and checking it, a group's room
and a seat's stand-in (``document``), and the surveys' answers (``surveys``)."""

from conversation.study.definition.document import (
    StudyDefinition,
    definition_from_dict,
    definition_problems,
    load_definition,
    read_definition,
)
from conversation.study.definition.schema import DEFINITION_VERSION

__all__ = [
    "DEFINITION_VERSION",
    "StudyDefinition",
    "definition_from_dict",
    "definition_problems",
    "load_definition",
    "read_definition",
]
