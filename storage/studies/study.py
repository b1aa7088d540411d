"""A study's own row: stored with the experiment its rooms belong to, read by its code, counted
for a listing, and changed (status, cap, definition) under its lock."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from storage.checks import UNSET, _Unset, json_object
from storage.database import Database
from storage.errors import StorageValueError, StudyNotFound
from storage.tables import Experiment, Study, StudyGroup, StudyParticipant
from vocabulary import STUDY_STATUSES, ExperimentStatus, GroupStatus, ParticipantStage


def create_study(
    db: Database,
    *,
    code: str,
    name: str,
    definition: Mapping[str, Any],
    seed: int,
    cap: int | None,
    experiment_config: Mapping[str, Any],
    bundle: Mapping[str, Any] | None = None,
    bundle_hash: str | None = None,
) -> Study:
    """Store a study and the experiment its rooms belong to (status ``draft``: its rooms are
    added one group at a time, never all at once by the runner), in one transaction; a
    preregistered study with its frozen ``bundle`` and its hash."""
    document = json_object(dict(definition), "definition")
    config = json_object(dict(experiment_config), "experiment config")
    now = db.now()
    with db.write() as session:
        experiment = Experiment(
            name=name,
            config=config,
            status=ExperimentStatus.DRAFT,
            created_at=now,
            updated_at=now,
        )
        session.add(experiment)
        session.flush()
        study = Study(
            code=code,
            name=name,
            definition=document,
            seed=seed,
            cap=cap,
            experiment_id=experiment.id,
            bundle=json_object(dict(bundle), "bundle") if bundle is not None else None,
            bundle_hash=bundle_hash,
            created_at=now,
            updated_at=now,
        )
        session.add(study)
        session.flush()
        return study


def get_study(db: Database, code: str | None = None, *, study_id: int | None = None) -> Study:
    """A study by its code (or id). Raises :class:`StudyNotFound`."""
    with db.read() as session:
        query = select(Study).where(
            Study.code == code if study_id is None else Study.id == study_id
        )
        study = session.exec(query).first()
    if study is None:
        raise StudyNotFound(f"study {code or study_id!r} does not exist")
    return study


def list_studies(db: Database) -> list[Study]:
    """Every study, newest first."""
    with db.read() as session:
        return list(session.exec(select(Study).order_by(col(Study.id).desc())))


@dataclass(frozen=True, slots=True)
class StudyCounts:
    """One study's numbers for a listing: its participants by where they are (their stage; for
    those who left, their exit status, e.g. ``completed``) and its groups by status."""

    participants: dict[str, int]
    groups: dict[str, int]
    places: int = 0
    """People who consented: the places of the study's cap they hold."""


def study_counts(db: Database) -> dict[int, StudyCounts]:
    """Every study's :class:`StudyCounts` by study id (a study with no one yet is absent): three
    grouped reads, whatever the number of studies."""
    by_place = (
        col(StudyParticipant.study_id),
        col(StudyParticipant.stage),
        col(StudyParticipant.exit_status),
    )
    people = select(*by_place, func.count()).group_by(*by_place)
    by_status = (col(StudyGroup.study_id), col(StudyGroup.status))
    groups = select(*by_status, func.count()).group_by(*by_status)
    consented = (
        select(col(StudyParticipant.study_id), func.count())
        .where(col(StudyParticipant.consented_at).is_not(None))
        .group_by(col(StudyParticipant.study_id))
    )
    found: dict[int, StudyCounts] = {}

    def of(study_id: int) -> StudyCounts:
        return found.setdefault(study_id, StudyCounts(participants={}, groups={}))

    with db.read() as session:
        for study_id, stage, exit_status, n in session.exec(people):
            where = (exit_status or stage) if stage == ParticipantStage.EXIT else stage
            counts = of(study_id).participants
            counts[where] = counts.get(where, 0) + int(n)
        for study_id, status, n in session.exec(groups):
            of(study_id).groups[status] = int(n)
        for study_id, n in session.exec(consented):
            found[study_id] = replace(of(study_id), places=int(n))
    return found


def active_study_codes(db: Database) -> list[str]:
    """The codes of the studies the clock has work in: someone still on their path (not at the
    exit) or a group still running. One read; an index probe per study."""
    on_path = select(StudyParticipant.study_id).where(
        StudyParticipant.stage != ParticipantStage.EXIT
    )
    running = select(StudyGroup.study_id).where(StudyGroup.status == GroupStatus.RUNNING)
    query = select(Study.code).where(col(Study.id).in_(on_path) | col(Study.id).in_(running))
    with db.read() as session:
        return [str(code) for code in session.exec(query.order_by(col(Study.id)))]


def update_study(
    db: Database,
    study_id: int,
    *,
    status: str | _Unset = UNSET,
    cap: int | None | _Unset = UNSET,
    definition: Mapping[str, Any] | _Unset = UNSET,
) -> Study:
    """Change a study's status, cap or definition (a new definition bumps ``version``)."""
    if not isinstance(status, _Unset) and status not in STUDY_STATUSES:
        raise StorageValueError(f"status={status!r} must be one of {sorted(STUDY_STATUSES)}")
    with db.write() as session:
        study = locked_study(session, study_id)
        if not isinstance(status, _Unset):
            study.status = status
        if not isinstance(cap, _Unset):
            study.cap = cap
        if not isinstance(definition, _Unset):
            study.definition = json_object(dict(definition), "definition")
            study.version += 1
        study.updated_at = db.now()
        session.add(study)
        return study


def locked_study(session: Any, study_id: int) -> Study:
    """The study's row, locked for the caller's write transaction (PostgreSQL ``FOR UPDATE``;
    SQLite serialises writers anyway): admissions and group formations of one study queue on
    it. Raises :class:`StudyNotFound`."""
    study = session.exec(select(Study).where(Study.id == study_id).with_for_update()).first()
    if study is None:
        raise StudyNotFound(f"study {study_id} does not exist")
    return study  # type: ignore[no-any-return]


__all__ = [
    "StudyCounts",
    "active_study_codes",
    "create_study",
    "get_study",
    "list_studies",
    "locked_study",
    "study_counts",
    "update_study",
]
