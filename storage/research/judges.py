"""Judges: rubric versions, judge panel runs and each judge's score of a unit on a dimension.

Storage knows nothing of EDSL or of what a rubric means: a rubric version is a name, a unit kind,
a content hash (``version``) and a JSON definition; a score is a JSON value (or an error) with
its reason, prompt, model spec, cost and the model cache key, stored under
``(rubric version, unit, judge, dimension)``.

Guarantees:
- saving a rubric version that is already stored (same experiment, name and version) returns the
  stored row: versions are never duplicated, never changed;
- a score is written once per ``(rubric_id, unit, judge, dimension)``: recording it again (a
  retry, a forced re-run) replaces the value, reason, error and accounting in place, in one
  write transaction for the whole batch;
- deleting an experiment deletes its rubrics, their runs and scores; deleting a room or an event
  deletes the scores of its units (foreign keys with ``ON DELETE CASCADE``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlmodel import col, select

from storage.checks import UNSET, _Unset, check_json, check_name, require_in
from storage.database import Database
from storage.database.statements import add_row, get_row
from storage.errors import RecordNotFound, StorageValueError
from storage.secret_guard import check_no_secrets
from storage.tables import JudgeRubric, JudgeRun, JudgeScore
from vocabulary import JUDGE_RUN_STATUSES

#: Counters replaced, not added to (how many scores are missing now).
_REPLACED_COUNTERS = frozenset({"failed"})
UNIT_KINDS = frozenset({"message", "room"})
#: The fields of a score a caller gives (``record_judge_scores``); the rest are storage's.
SCORE_FIELDS = (
    "room_id", "event_id", "seq", "unit", "judge", "dimension", "dimension_version",
    "rubric_version", "value", "reason", "prompt", "model", "cost", "input_tokens",
    "output_tokens", "cache_key", "reason_cache_key", "cached", "reused_from", "error",
)  # fmt: skip
_REQUIRED = ("room_id", "unit", "judge", "dimension", "dimension_version", "rubric_version")
_COUNTERS = ("asked", "reused", "cached", "failed", "input_tokens", "output_tokens")


def save_rubric(
    db: Database,
    name: str,
    version: str,
    unit: str,
    definition: Mapping[str, Any],
    *,
    experiment_id: int | None = None,
) -> JudgeRubric:
    """Store one version of a rubric (or return the stored one: same experiment, name, version)."""
    check_name(name, "name", max_length=120)
    check_name(version, "version", max_length=32)
    require_in(unit, UNIT_KINDS, "unit")
    if not isinstance(definition, Mapping) or not definition:
        raise StorageValueError("definition must be a non-empty dict (the rubric's JSON form)")
    definition = dict(definition)
    check_json(definition, "definition")
    check_no_secrets(definition, field="definition")
    with db.write() as session:
        found = session.exec(
            select(JudgeRubric).where(
                JudgeRubric.experiment_id == experiment_id,
                JudgeRubric.name == name,
                JudgeRubric.version == version,
            )
        ).first()
        if found is not None:
            return found
        row = JudgeRubric(
            experiment_id=experiment_id,
            name=name,
            version=version,
            unit=unit,
            definition=definition,
            created_at=db.now(),
        )
        add_row(session, row)
        return row


def get_rubric(db: Database, rubric_id: int) -> JudgeRubric:
    """One stored rubric version. Raises :class:`RecordNotFound`."""
    row: JudgeRubric = get_row(db, JudgeRubric, rubric_id, RecordNotFound, "rubric")
    return row


def list_rubrics(
    db: Database, *, experiment_id: int | None = None, name: str | None = None
) -> list[JudgeRubric]:
    """Rubric versions of an experiment (``None``: those of no experiment), newest first;
    ``name``: the versions of one rubric."""
    query = select(JudgeRubric).where(JudgeRubric.experiment_id == experiment_id)
    if name is not None:
        query = query.where(JudgeRubric.name == name)
    with db.read() as session:
        return list(session.exec(query.order_by(col(JudgeRubric.id).desc())))


def create_judge_run(
    db: Database,
    rubric_id: int,
    panel: Sequence[Mapping[str, Any]],
    *,
    experiment_id: int | None = None,
) -> int:
    """Store a run of ``panel`` (``[{"name": ..., "model": spec}, ...]``, secret-free) with a
    rubric version; its id. Status ``running``, counters at zero."""
    members = [dict(m) for m in panel]
    if not members or any(not isinstance(m.get("name"), str) for m in members):
        raise StorageValueError("panel must be a non-empty list of {'name': ..., 'model': ...}")
    check_json(members, "panel")
    check_no_secrets(members, field="panel")
    now = db.now()
    with db.write() as session:
        if session.get(JudgeRubric, rubric_id) is None:
            raise RecordNotFound(f"rubric {rubric_id} does not exist")
        run = JudgeRun(
            rubric_id=rubric_id,
            experiment_id=experiment_id,
            panel=members,
            status="running",
            created_at=now,
            updated_at=now,
        )
        return add_row(session, run)


def get_judge_run(db: Database, run_id: int) -> JudgeRun:
    """One run. Raises :class:`RecordNotFound`."""
    row: JudgeRun = get_row(db, JudgeRun, run_id, RecordNotFound, "judge run")
    return row


def list_judge_runs(
    db: Database, *, rubric_id: int | None = None, experiment_id: int | None = None
) -> list[JudgeRun]:
    """Runs of a rubric version and/or an experiment, newest first."""
    query = select(JudgeRun).order_by(col(JudgeRun.id).desc())
    if rubric_id is not None:
        query = query.where(JudgeRun.rubric_id == rubric_id)
    if experiment_id is not None:
        query = query.where(JudgeRun.experiment_id == experiment_id)
    with db.read() as session:
        return list(session.exec(query))


def update_judge_run(
    db: Database,
    run_id: int,
    *,
    status: str | _Unset = UNSET,
    add: Mapping[str, int] | None = None,
    add_cost: float | None = None,
) -> JudgeRun:
    """Change a run's status and add to its counters (``add``: asked, reused, cached, failed,
    input_tokens, output_tokens) and its spend (``add_cost`` dollars; unknown prices add
    nothing). ``failed`` is replaced, not added: it is how many scores are missing now."""
    if not isinstance(status, _Unset):
        require_in(status, JUDGE_RUN_STATUSES, "status")
    unknown = sorted(set(add or {}) - set(_COUNTERS))
    if unknown:
        raise StorageValueError(f"unknown run counters {unknown}; use {list(_COUNTERS)}")
    with db.write() as session:
        run = session.get(JudgeRun, run_id)
        if run is None:
            raise RecordNotFound(f"judge run {run_id} does not exist")
        for name, amount in (add or {}).items():
            current = 0 if name in _REPLACED_COUNTERS else getattr(run, name)
            setattr(run, name, current + int(amount))
        if add_cost is not None:
            run.cost = (run.cost or 0.0) + float(add_cost)
        if not isinstance(status, _Unset):
            run.status = status
        run.updated_at = db.now()
        session.add(run)
        session.flush()
        return run


def _checked_score(score: Mapping[str, Any], index: int) -> dict[str, Any]:
    unknown = sorted(set(score) - set(SCORE_FIELDS))
    if unknown:
        raise StorageValueError(f"scores[{index}] has unknown fields {unknown}")
    missing = [f for f in _REQUIRED if score.get(f) is None]
    if missing:
        raise StorageValueError(f"scores[{index}] lacks {missing}")
    row = {field: score.get(field) for field in SCORE_FIELDS}
    row["cached"] = bool(row["cached"])
    for field in ("value", "model", "error"):
        check_json(row[field], f"scores[{index}].{field}")
    check_no_secrets(row["model"], field=f"scores[{index}].model")
    return row


def record_judge_scores(
    db: Database, run_id: int, rubric_id: int, scores: Sequence[Mapping[str, Any]]
) -> int:
    """Store scores of ``run_id`` under ``rubric_id`` (each a dict of :data:`SCORE_FIELDS`),
    replacing any stored for the same ``(unit, judge, dimension)``; how many were written."""
    rows = [_checked_score(score, i) for i, score in enumerate(scores)]
    if not rows:
        return 0
    now = db.now()
    units = sorted({row["unit"] for row in rows})
    with db.write() as session:
        stored = {
            (s.unit, s.judge, s.dimension): s
            for s in session.exec(
                select(JudgeScore).where(
                    JudgeScore.rubric_id == rubric_id, col(JudgeScore.unit).in_(units)
                )
            )
        }
        for row in rows:
            found = stored.get((row["unit"], row["judge"], row["dimension"]))
            if found is None:
                found = JudgeScore(run_id=run_id, rubric_id=rubric_id, created_at=now, **row)
                stored[(row["unit"], row["judge"], row["dimension"])] = found
            else:
                for field, value in row.items():
                    setattr(found, field, value)
                found.run_id = run_id
            found.updated_at = now
            session.add(found)
        session.flush()
    return len(rows)


def judge_scores(
    db: Database,
    *,
    rubric_id: int | None = None,
    run_id: int | None = None,
    room_ids: Sequence[int] | None = None,
    failed: bool | None = None,
) -> list[JudgeScore]:
    """Scores of a rubric version and/or a run, optionally of some rooms; ``failed``: only the
    failures (True) or only the values (False). Ordered by room, seq, judge, dimension."""
    if rubric_id is None and run_id is None:
        raise StorageValueError("pass rubric_id=... or run_id=... (or both)")
    query = select(JudgeScore).order_by(
        col(JudgeScore.room_id), col(JudgeScore.seq), col(JudgeScore.judge),
        col(JudgeScore.dimension),
    )  # fmt: skip
    if rubric_id is not None:
        query = query.where(JudgeScore.rubric_id == rubric_id)
    if run_id is not None:
        query = query.where(JudgeScore.run_id == run_id)
    if room_ids is not None:
        query = query.where(col(JudgeScore.room_id).in_(sorted({int(r) for r in room_ids})))
    if failed is True:
        query = query.where(col(JudgeScore.error).is_not(None))
    elif failed is False:
        query = query.where(col(JudgeScore.error).is_(None))
    with db.read() as session:
        return list(session.exec(query))


__all__ = [
    "JUDGE_RUN_STATUSES",
    "SCORE_FIELDS",
    "create_judge_run",
    "get_judge_run",
    "get_rubric",
    "judge_scores",
    "list_judge_runs",
    "list_rubrics",
    "record_judge_scores",
    "save_rubric",
    "update_judge_run",
]
