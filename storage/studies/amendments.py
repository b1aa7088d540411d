"""A preregistered study's frozen bundle and its amendments (``study_amendments``): an
amendment stores the amended definition (the study's next version), the amended bundle and its
hash, and its own row and a note in the study's log, in one write."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from storage.checks import json_object
from storage.database import Database
from storage.errors import StorageValueError
from storage.studies.study import locked_study
from storage.studies.study_log import note_on
from storage.tables import StudyAmendment


def amend_study(
    db: Database,
    study_id: int,
    *,
    definition: Mapping[str, Any],
    bundle: Mapping[str, Any],
    bundle_hash: str,
    reason: str,
    changes: Sequence[str],
    by: str | None,
    note_kind: str,
) -> StudyAmendment:
    """Amend a frozen study: its definition (next version), bundle and hash, an amendment row
    (numbered 1, 2, ...) and a ``note_kind`` note in its log, one write transaction."""
    if not isinstance(reason, str) or not reason.strip():
        raise StorageValueError("an amendment needs a reason")
    now = db.now()
    with db.write() as session:
        study = locked_study(session, study_id)
        if study.bundle_hash is None:
            raise StorageValueError(f"study {study.code!r} was not launched from a frozen bundle")
        study.definition = json_object(dict(definition), "definition")
        study.version += 1
        study.bundle = json_object(dict(bundle), "bundle")
        study.bundle_hash = bundle_hash
        study.updated_at = now
        session.add(study)
        last = session.exec(
            select(func.max(StudyAmendment.number)).where(StudyAmendment.study_id == study_id)
        ).one()
        amendment = StudyAmendment(
            study_id=study_id,
            number=int(last or 0) + 1,
            reason=reason,
            changes=list(changes),
            version=study.version,
            bundle_hash=bundle_hash,
            by=by,
            at=now,
        )
        session.add(amendment)
        session.flush()
        note_on(
            session.connection(),
            study_id,
            note_kind,
            now,
            data={"number": amendment.number, "changes": list(changes), "by": by},
        )
        return amendment


def study_amendments(db: Database, study_id: int) -> list[StudyAmendment]:
    """The study's amendments, in order."""
    with db.read() as session:
        return list(
            session.exec(
                select(StudyAmendment)
                .where(StudyAmendment.study_id == study_id)
                .order_by(col(StudyAmendment.number))
            )
        )


__all__ = ["amend_study", "study_amendments"]
