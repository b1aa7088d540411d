"""The background run of an analysis: which answers are still to ask, and who is asking them.

An analysis planned for some rooms has one answer row per room (``storage.create_analysis``);
a runner claims a few rows that are ``planned`` (or ``asking`` under an expired claim) with
:func:`claim_answers`, asks them, and stores each with ``record_answer(..., claimed_by=owner)``.

Guarantees: a claim is taken in one write transaction under the analysis row's lock
(PostgreSQL ``SELECT ... FOR UPDATE``; SQLite's write transactions are serialised), so two
runners never hold the same room at once; an answer is stored only while its claim is held (a
runner whose claim expired is fenced out). A runner that died leaves ``asking`` rows: they are
claimable again once the claim expires, or at once when freed (:func:`free_answer_claims_of`, for
owners whose process is certainly gone). Rows already answered are never claimed, so a resumed
run asks only what is missing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, update
from sqlmodel import col, select

from storage.database import Database
from storage.errors import StorageValueError
from storage.tables import Analysis, AnalysisAnswer
from vocabulary import OPEN_ANSWER_STATES, AnalysisStatus, AnswerState

_OPEN = sorted(OPEN_ANSWER_STATES)


def _check(owner: str, ttl_seconds: float | None = None) -> None:
    if not isinstance(owner, str) or not owner:
        raise StorageValueError(
            f"owner={owner!r} must be a non-empty string (e.g. 'analyses:host:pid:nonce')"
        )
    if ttl_seconds is not None and not ttl_seconds > 0:
        raise StorageValueError(f"ttl_seconds={ttl_seconds!r} must be > 0")


def _claimable(now: datetime) -> Any:
    """Planned, or asked under a claim that has expired (its runner is gone or too slow)."""
    state = col(AnalysisAnswer.state)
    until = col(AnalysisAnswer.claimed_until)
    return and_(
        state.in_(_OPEN),  # the partial index's predicate, so the scan uses it
        or_(
            state == AnswerState.PLANNED,
            until.is_(None),
            until < now,
        ),
    )


def open_analyses(db: Database, *, limit: int = 20) -> list[int]:
    """Analyses with an answer a runner may claim now, oldest first (one read, no lock)."""
    query = (
        select(AnalysisAnswer.analysis_id)
        .where(_claimable(db.now()))
        .group_by(col(AnalysisAnswer.analysis_id))
        .order_by(col(AnalysisAnswer.analysis_id))
        .limit(limit)
    )
    with db.read() as session:
        return [int(a) for a in session.exec(query)]


def _locked_analysis(session: Any, analysis_id: int) -> Analysis | None:
    """The analysis row, locked for this write (claims and re-plans of one analysis queue)."""
    found: Analysis | None = session.exec(
        select(Analysis).where(Analysis.id == analysis_id).with_for_update()
    ).first()
    return found


def claim_answers(
    db: Database, analysis_id: int, owner: str, *, limit: int, ttl_seconds: float
) -> list[int]:
    """Claim up to ``limit`` answers of the analysis for ``owner`` until ``ttl_seconds`` from
    now (state ``asking``); their room ids, in id order ([] when none is left, or the analysis
    is gone). The analysis is marked ``running``."""
    _check(owner, ttl_seconds)
    if limit < 1:
        raise StorageValueError(f"limit={limit!r} must be >= 1")
    now = db.now()
    with db.write() as session:
        analysis = _locked_analysis(session, analysis_id)
        if analysis is None:
            return []
        rows = list(
            session.exec(
                select(AnalysisAnswer)
                .where(AnalysisAnswer.analysis_id == analysis_id, _claimable(now))
                .order_by(col(AnalysisAnswer.room_id))
                .limit(limit)
            )
        )
        for row in rows:
            row.state = AnswerState.ASKING
            row.claimed_by = owner
            row.claimed_until = now + timedelta(seconds=ttl_seconds)
            row.updated_at = now  # when the claim was taken (see answer_claim_holders)
        if rows and analysis.status != AnalysisStatus.RUNNING:
            analysis.status = AnalysisStatus.RUNNING
            analysis.updated_at = now
        return [int(row.room_id) for row in rows]


def renew_answer_claims(
    db: Database, analysis_id: int, owner: str, room_ids: Iterable[int], ttl_seconds: float
) -> int:
    """Extend ``owner``'s claims on these rooms (a heartbeat); how many it still held."""
    _check(owner, ttl_seconds)
    ids = sorted(set(room_ids))
    if not ids:
        return 0
    until = db.now() + timedelta(seconds=ttl_seconds)
    with db.write() as session:
        result = session.exec(
            update(AnalysisAnswer)
            .where(
                col(AnalysisAnswer.analysis_id) == analysis_id,
                col(AnalysisAnswer.room_id).in_(ids),
                col(AnalysisAnswer.state) == AnswerState.ASKING,
                col(AnalysisAnswer.claimed_by) == owner,
            )
            .values(claimed_until=until)
        )
        return int(result.rowcount or 0)


def release_answer_claims(db: Database, owner: str) -> int:
    """Give back every answer ``owner`` is asking (``planned`` again: another runner asks it)."""
    return free_answer_claims_of(db, [owner])


def free_answer_claims_of(db: Database, owners: Collection[str]) -> int:
    """Plan again every answer these owners were asking (owners whose process is gone); how
    many."""
    for owner in owners:
        _check(owner)
    if not owners:
        return 0
    with db.write() as session:
        result = session.exec(
            update(AnalysisAnswer)
            .where(
                col(AnalysisAnswer.state) == AnswerState.ASKING,
                col(AnalysisAnswer.claimed_by).in_(sorted(owners)),
            )
            .values(state=AnswerState.PLANNED, claimed_by=None, claimed_until=None)
        )
        return int(result.rowcount or 0)


def answer_claim_holders(db: Database) -> dict[str, datetime | None]:
    """``{owner: when its earliest claim still held was taken}`` of every runner asking now."""
    query = (
        select(AnalysisAnswer.claimed_by, func.min(AnalysisAnswer.updated_at))
        .where(col(AnalysisAnswer.state) == AnswerState.ASKING)
        .group_by(col(AnalysisAnswer.claimed_by))
    )
    with db.read() as session:
        return {str(owner): since for owner, since in session.exec(query) if owner}


def plan_answers_again(
    db: Database, analysis_id: int, *, states: Collection[str] = (AnswerState.FAILED,)
) -> list[int]:
    """Mark the analysis's answers in ``states`` (default: the failed ones) to be asked again
    (``planned``; their last error stays until a new answer replaces it) and the analysis
    ``running``; the room ids."""
    now = db.now()
    with db.write() as session:
        analysis = _locked_analysis(session, analysis_id)
        if analysis is None:
            return []
        rows = list(
            session.exec(
                select(AnalysisAnswer)
                .where(
                    AnalysisAnswer.analysis_id == analysis_id,
                    col(AnalysisAnswer.state).in_(sorted(states)),
                )
                .order_by(col(AnalysisAnswer.room_id))
            )
        )
        for row in rows:
            row.state = AnswerState.PLANNED
            row.claimed_by = None
            row.claimed_until = None
            row.updated_at = now
        if rows:
            analysis.status = AnalysisStatus.RUNNING
            analysis.updated_at = now
        return [int(row.room_id) for row in rows]


def answer_counts(db: Database, analysis_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """``{analysis_id: {state: n}}`` of these analyses (an analysis without answers: ``{}``)."""
    ids = sorted(set(analysis_ids))
    counts: dict[int, dict[str, int]] = {a: {} for a in ids}
    if not ids:
        return counts
    query = (
        select(AnalysisAnswer.analysis_id, AnalysisAnswer.state, func.count())
        .where(col(AnalysisAnswer.analysis_id).in_(ids))
        .group_by(col(AnalysisAnswer.analysis_id), col(AnalysisAnswer.state))
    )
    with db.read() as session:
        for analysis_id, state, n in session.exec(query):
            counts[int(analysis_id)][str(state)] = int(n)
    return counts


def settle_analysis(db: Database, analysis_id: int) -> str | None:
    """Set the analysis's status from its answers and return it: ``running`` while any is to
    be asked, else ``failed`` while any failed, else ``done`` (None: no such analysis)."""
    with db.write() as session:
        analysis = session.exec(
            select(Analysis).where(Analysis.id == analysis_id).with_for_update()
        ).first()
        if analysis is None:
            return None
        states = set(
            session.exec(
                select(AnalysisAnswer.state)
                .where(AnalysisAnswer.analysis_id == analysis_id)
                .distinct()
            )
        )
        if states & OPEN_ANSWER_STATES:
            status = AnalysisStatus.RUNNING
        elif AnswerState.FAILED in states:
            status = AnalysisStatus.FAILED
        else:
            status = AnalysisStatus.DONE
        if analysis.status != status:
            analysis.status = status
            analysis.updated_at = db.now()
        return str(status)


__all__ = [
    "answer_claim_holders",
    "answer_counts",
    "claim_answers",
    "free_answer_claims_of",
    "open_analyses",
    "plan_answers_again",
    "release_answer_claims",
    "renew_answer_claims",
    "settle_analysis",
]
