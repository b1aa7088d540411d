"""The studies' tables as SQLAlchemy Core tables, for the reads and writes that skip the ORM
(an open participant page reads about once a second: the ORM's per-statement work was a fifth of
the app server's CPU at 24 participants, ``benchmarks/participants_load.py``)."""

from __future__ import annotations

from typing import Any

from storage.tables import Study, StudyEvent, StudyGroup, StudyParticipant, StudyToken

STUDIES: Any = Study.__table__  # type: ignore[attr-defined]
PEOPLE: Any = StudyParticipant.__table__  # type: ignore[attr-defined]
TOKENS: Any = StudyToken.__table__  # type: ignore[attr-defined]
GROUPS: Any = StudyGroup.__table__  # type: ignore[attr-defined]
NOTES: Any = StudyEvent.__table__  # type: ignore[attr-defined]

__all__ = ["GROUPS", "NOTES", "PEOPLE", "STUDIES", "TOKENS"]
