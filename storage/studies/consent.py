"""The consent texts of a study, one row per version (``consent_versions``): a text is stored
once, by its sha256, the first time it is in force (at launch, or when a changed text is first
agreed to); a participant's record names the version they agreed to."""

from __future__ import annotations

import hashlib

from sqlalchemy import func
from sqlmodel import col, select

from storage.database import Database
from storage.studies.study import locked_study
from storage.tables import ConsentVersion


def text_hash(text: str) -> str:
    """A consent text's sha256 (hex), the version's identity."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def consent_version(db: Database, study_id: int, text: str) -> ConsentVersion:
    """The version of ``text`` for the study: the stored one, or the next version stored now
    (under the study's lock, so two first agreements at once make one version)."""
    digest = text_hash(text)
    found = _find(db, study_id, digest)
    if found is not None:
        return found
    with db.write() as session:
        locked_study(session, study_id)
        row = session.exec(
            select(ConsentVersion).where(
                ConsentVersion.study_id == study_id, ConsentVersion.text_hash == digest
            )
        ).first()
        if row is not None:
            return row  # type: ignore[no-any-return]
        last = session.exec(
            select(func.max(ConsentVersion.version)).where(ConsentVersion.study_id == study_id)
        ).one()
        row = ConsentVersion(
            study_id=study_id,
            version=int(last or 0) + 1,
            text_hash=digest,
            text=text,
            created_at=db.now(),
        )
        session.add(row)
        session.flush()
        return row


def _find(db: Database, study_id: int, digest: str) -> ConsentVersion | None:
    with db.read() as session:
        return session.exec(  # type: ignore[no-any-return]
            select(ConsentVersion).where(
                ConsentVersion.study_id == study_id, ConsentVersion.text_hash == digest
            )
        ).first()


def consent_versions(db: Database, study_id: int) -> list[ConsentVersion]:
    """Every consent version of the study, oldest first."""
    with db.read() as session:
        return list(
            session.exec(
                select(ConsentVersion)
                .where(ConsentVersion.study_id == study_id)
                .order_by(col(ConsentVersion.version))
            )
        )


__all__ = ["consent_version", "consent_versions", "text_hash"]
