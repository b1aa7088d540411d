"""Consent records: each text a study asked people to agree to, stored once per version (its
sha256 and the text) the first time someone agrees to it, and the version each person agreed
to, with when (``consented_at``). A consent text changed after launch (``update_definition``,
or an amendment of a preregistered study) is a new version; exports carry each person's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import storage
from conversation.boundary import translated
from conversation.study.definition.document import StudyDefinition
from conversation.study.record import Study, get_study


@dataclass(frozen=True, slots=True)
class ConsentRecord:
    """One consent text of a study: its version, sha256, text and when it was first agreed to."""

    version: int
    hash: str
    text: str
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "hash": self.hash,
            "text": self.text,
            "created_at": self.created_at,
        }


def agreed_version(db: storage.Database, study: Study, definition: StudyDefinition) -> int:
    """The version number of the consent text ``definition`` shows (stored now if it is new)."""
    with translated():
        return int(storage.consent_version(db, study.id, definition.model.consent).version)


def consent_versions(db: storage.Database, code: str) -> list[ConsentRecord]:
    """Every consent text of the study, oldest first."""
    study = get_study(db, code)
    with translated():
        rows = storage.consent_versions(db, study.id)
    return [ConsentRecord(r.version, r.text_hash, r.text, r.created_at) for r in rows]


__all__ = ["ConsentRecord", "agreed_version", "consent_versions"]
