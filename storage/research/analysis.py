"""Analyses: a follow-up question run over transcripts, and each room's answer to it."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from sqlalchemy import delete, func
from sqlmodel import col, select

from storage.checks import UNSET, _Unset, as_set, check_json, check_limit, check_name, require_in
from storage.database import Database
from storage.database.statements import add_row, get_row
from storage.errors import AnalysisNotFound, RoomNotFound, StorageValueError
from storage.secret_guard import check_no_secrets
from storage.tables import Analysis, AnalysisAnswer, Room
from vocabulary import ANALYSIS_STATUSES, AnswerState


def _json_object(value: Any, field: str) -> Any:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise StorageValueError(
            f"{field} must be a dict (a JSON object), not {type(value).__name__}"
        )
    check_json(value, field)
    check_no_secrets(value, field=field)
    return value


def create_analysis(
    db: Database,
    name: str,
    question: dict[str, Any],
    *,
    model: dict[str, Any] | None = None,
    experiment_id: int | None = None,
    status: str = "pending",
    room_ids: Iterable[int] | None = None,
) -> int:
    """Store an analysis (e.g. ``{"text": "Was a deal reached?", "type": "yes_no"}``); its id.

    ``question`` and ``model`` are strict, secret-free JSON objects. ``room_ids``: the rooms it
    is planned for, stored with it (one answer row each, ``planned``) in the same transaction,
    so what is missing is known from storage alone. Raises :class:`RoomNotFound`.
    """
    check_name(name, "name")
    planned = sorted({int(r) for r in room_ids or ()})
    if not question:
        raise StorageValueError("question must be a non-empty dict, e.g. {'text': '...'}")
    question = _json_object(question, "question")
    model = _json_object(model, "model")
    require_in(status, ANALYSIS_STATUSES, "status")
    now = db.now()
    with db.write() as session:
        analysis = Analysis(
            name=name,
            question=question,
            model=model,
            experiment_id=experiment_id,
            status=status,
            created_at=now,
            updated_at=now,
        )
        analysis_id = add_row(session, analysis)
        if planned:
            found = set(session.exec(select(Room.id).where(col(Room.id).in_(planned))))
            missing = [r for r in planned if r not in found]
            if missing:
                raise RoomNotFound(f"rooms {missing} do not exist; plan only stored rooms")
            for room_id in planned:
                session.add(
                    AnalysisAnswer(
                        analysis_id=analysis_id,
                        room_id=room_id,
                        state=AnswerState.PLANNED,
                        created_at=now,
                        updated_at=now,
                    )
                )
        return analysis_id


def get_analysis(db: Database, analysis_id: int) -> Analysis:
    """One analysis. Raises :class:`AnalysisNotFound`."""
    row: Analysis = get_row(db, Analysis, analysis_id, AnalysisNotFound, "analysis")
    return row


def list_analyses(
    db: Database,
    *,
    experiment_id: int | None = None,
    status: str | Collection[str] | None = None,
    limit: int | None = 100,
    offset: int = 0,
) -> list[Analysis]:
    """Analyses, newest first."""
    check_limit(limit, offset)
    query = select(Analysis).order_by(col(Analysis.id).desc()).offset(offset)
    if experiment_id is not None:
        query = query.where(Analysis.experiment_id == experiment_id)
    statuses = as_set(status)
    if statuses is not None:
        query = query.where(col(Analysis.status).in_(sorted(statuses)))
    if limit is not None:
        query = query.limit(limit)
    with db.read() as session:
        return list(session.exec(query))


def update_analysis(
    db: Database,
    analysis_id: int,
    *,
    name: str | _Unset = UNSET,
    status: str | _Unset = UNSET,
) -> Analysis:
    """Rename an analysis or change its status; return it."""
    if not isinstance(name, _Unset):
        check_name(name, "name")
    if not isinstance(status, _Unset):
        require_in(status, ANALYSIS_STATUSES, "status")
    with db.write() as session:
        analysis = session.get(Analysis, analysis_id)
        if analysis is None:
            raise AnalysisNotFound(f"analysis {analysis_id} does not exist")
        if not isinstance(name, _Unset):
            analysis.name = name
        if not isinstance(status, _Unset):
            analysis.status = status
        analysis.updated_at = db.now()
        return analysis


def delete_analysis(db: Database, analysis_id: int) -> bool:
    """Delete an analysis and its answers."""
    with db.write() as session:
        result = session.exec(delete(Analysis).where(col(Analysis.id) == analysis_id))
        return bool(result.rowcount)


def record_answer(
    db: Database,
    analysis_id: int,
    room_id: int,
    answer: Any,
    *,
    comment: str | None = None,
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cost: float | None = None,
    error: dict[str, Any] | None = None,
    claimed_by: str | None = None,
) -> AnalysisAnswer | None:
    """Store a room's answer to an analysis (``answered``, or ``failed`` with an ``error``),
    replacing an earlier one (at most one per room). ``answer``: any strict JSON value.
    ``claimed_by``: the runner that asked it (``storage.claim_answers``); the answer is stored
    only while that runner still holds the room's claim, else nothing is written and ``None``
    is returned (a runner whose claim expired never overwrites its successor's answer).
    Raises :class:`AnalysisNotFound`, :class:`RoomNotFound`.
    """
    check_json(answer, "answer")
    if error is not None:
        check_json(error, "error")
    now = db.now()
    with db.write() as session:
        # Lock the analysis row: two workers answering for the same room take turns (PostgreSQL).
        found = session.exec(
            select(Analysis.id).where(Analysis.id == analysis_id).with_for_update()
        ).first()
        if found is None:
            raise AnalysisNotFound(f"analysis {analysis_id} does not exist")
        if session.get(Room, room_id) is None:
            raise RoomNotFound(f"room {room_id} does not exist")
        row = session.exec(
            select(AnalysisAnswer).where(
                AnalysisAnswer.analysis_id == analysis_id, AnalysisAnswer.room_id == room_id
            )
        ).first()
        if claimed_by is not None and (
            row is None or row.state != AnswerState.ASKING or row.claimed_by != claimed_by
        ):
            return None  # fenced out: the claim was lost (expired and taken, or released)
        if row is None:
            row = AnalysisAnswer(analysis_id=analysis_id, room_id=room_id, created_at=now)
            session.add(row)
        row.state = AnswerState.ANSWERED if error is None else AnswerState.FAILED
        row.claimed_by = None
        row.claimed_until = None
        row.answer = answer
        row.comment = comment
        row.model = model
        row.input_tokens = input_tokens
        row.output_tokens = output_tokens
        row.cost = cost
        row.error = error
        row.updated_at = now
        session.flush()
        return row


def answers(
    db: Database, analysis_id: int, *, room_ids: Collection[int] | None = None
) -> list[AnalysisAnswer]:
    """Every stored answer of an analysis (or those of ``room_ids``), by room id."""
    query = select(AnalysisAnswer).where(AnalysisAnswer.analysis_id == analysis_id)
    if room_ids is not None:
        query = query.where(col(AnalysisAnswer.room_id).in_(sorted(room_ids)))
    with db.read() as session:
        return list(session.exec(query.order_by(col(AnalysisAnswer.room_id))))


def count_answers(
    db: Database, *, room_ids: Collection[int] | None = None, experiment_id: int | None = None
) -> int:
    """How many stored answers concern these rooms, or the rooms of an experiment (what a
    delete would take with it)."""
    query = select(func.count()).select_from(AnalysisAnswer)
    if room_ids is not None:
        query = query.where(col(AnalysisAnswer.room_id).in_(sorted(room_ids)))
    if experiment_id is not None:
        query = query.where(
            col(AnalysisAnswer.room_id).in_(
                select(Room.id).where(Room.experiment_id == experiment_id)
            )
        )
    with db.read() as session:
        return int(session.exec(query).one())


__all__ = [
    "count_answers",
    "answers",
    "create_analysis",
    "delete_analysis",
    "get_analysis",
    "list_analyses",
    "record_answer",
    "update_analysis",
]
