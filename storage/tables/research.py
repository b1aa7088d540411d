"""The tables of research over rooms: analyses and their answers, codebooks and message tags,
judge rubrics, runs and scores.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from storage.coltypes import JSONDoc, UTCDateTime, utcnow

OPEN_ANSWER_WHERE = "state IN ('planned', 'asking')"
"""The partial-index predicate of the analysis runner's scan: answers still to ask (0015)."""


class Analysis(SQLModel, table=True):
    """A follow-up question run over transcripts (e.g. "was a deal reached?"). Revision 0002."""

    __tablename__ = "analyses"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    question: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    model: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="SET NULL"
    )
    status: str = Field(default="pending")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class AnalysisAnswer(SQLModel, table=True):
    """One room's answer to an analysis question (at most one per analysis and room).

    Revision 0015: ``state`` is ``planned`` (not asked yet), ``asking`` (claimed by a runner,
    ``claimed_by`` until ``claimed_until``), ``answered`` or ``failed`` (``error`` says why)."""

    __tablename__ = "analysis_answers"
    __table_args__ = (
        # One answer per (analysis, room): re-running a question replaces the answer.
        sa.UniqueConstraint("analysis_id", "room_id", name="uq_analysis_answers_analysis_room"),
        # Deleting a room cascades here; without this index SQLite scans the table per room.
        sa.Index("ix_analysis_answers_room", "room_id"),
        # The runner's scan over the answers still to ask (revision 0015).
        sa.Index(
            "ix_analysis_answers_open",
            "analysis_id",
            "room_id",
            sqlite_where=sa.text(OPEN_ANSWER_WHERE),
            postgresql_where=sa.text(OPEN_ANSWER_WHERE),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    analysis_id: int = Field(foreign_key="analyses.id", ondelete="CASCADE")
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    answer: Any = Field(default=None, sa_type=JSONDoc(), nullable=True)
    comment: str | None = Field(default=None, sa_type=sa.Text)
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    error: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    state: str = Field(default="answered", sa_column_kwargs={"server_default": "answered"})
    claimed_by: str | None = None
    claimed_until: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class CodeLabel(SQLModel, table=True):
    """A label of a qualitative-coding codebook: an experiment's (shared by its rooms) or, for a
    room outside any experiment, the room's own. Revision 0007."""

    __tablename__ = "code_labels"
    __table_args__ = (
        # The codebook of one experiment / one room; deleting either cascades through these.
        sa.Index("ix_code_labels_experiment", "experiment_id"),
        sa.Index("ix_code_labels_room", "room_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="CASCADE"
    )
    room_id: int | None = Field(default=None, foreign_key="rooms.id", ondelete="CASCADE")
    label: str = Field(max_length=80)
    description: str | None = Field(default=None, sa_type=sa.Text)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class MessageTag(SQLModel, table=True):
    """A researcher's code on one message: a label of the codebook, an optional rating and note,
    who and when. Never part of event data (events stay the room's log). Revision 0007."""

    __tablename__ = "message_tags"
    __table_args__ = (
        # One tag per (message, label, coder): tagging again updates the rating and note. It also
        # serves the cascade from a deleted event.
        sa.UniqueConstraint("event_id", "label", "by", name="uq_message_tags_event_label_by"),
        # A room's tags (transcript, exports) and the cascade from a deleted room.
        sa.Index("ix_message_tags_room", "room_id", "event_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    event_id: int = Field(foreign_key="events.id", ondelete="CASCADE")
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    label: str = Field(max_length=80)
    rating: int | None = None
    note: str | None = Field(default=None, sa_type=sa.Text)
    by: str
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


# --- judges (revision 0011): rubrics, judge panel runs, and each judge's score per unit -----------


class JudgeRubric(SQLModel, table=True):
    """One version of a rubric (``conversation.analysis.judges.rubrics``): its name, the unit it scores,
    its content hash and its definition. A rubric belongs to an experiment (its rooms are scored
    with it) or to none. An edit stores a new row; scores keep the row they were asked under."""

    __tablename__ = "judge_rubrics"
    __table_args__ = (
        # The versions of one rubric of one experiment, newest id first (pickers, re-scoring).
        sa.Index("ix_judge_rubrics_experiment_name", "experiment_id", "name", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="CASCADE"
    )
    name: str = Field(max_length=120)
    version: str = Field(max_length=32)
    unit: str = Field(max_length=16)
    definition: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class JudgeRun(SQLModel, table=True):
    """A judge panel asked about some units with one rubric version: the panel (names and model
    specs), its status and what it took (asked, reused, from the cache, failed, spend)."""

    __tablename__ = "judge_runs"
    __table_args__ = (sa.Index("ix_judge_runs_rubric", "rubric_id"),)

    id: int | None = Field(default=None, primary_key=True)
    rubric_id: int = Field(foreign_key="judge_rubrics.id", ondelete="CASCADE")
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="SET NULL"
    )
    panel: list[Any] = Field(default_factory=list, sa_type=JSONDoc())
    status: str = Field(default="running")
    asked: int = 0
    reused: int = 0
    cached: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class JudgeScore(SQLModel, table=True):
    """One judge's score of one unit (a message, or a whole room: ``seq`` NULL) on one dimension
    of one rubric version, with its reason, the prompt, the model, the cost and EDSL's cache
    key; or the error that kept it from being had (``value`` NULL). ``reused_from``: the score
    of an earlier version it was carried over from (the dimension did not change). The two cache
    keys (the score question's and the reason question's) let a forced re-run answer from the
    model cache."""

    __tablename__ = "judge_scores"
    __table_args__ = (
        # One score per (rubric version, unit, judge, dimension): asking again replaces it.
        sa.UniqueConstraint(
            "rubric_id", "unit", "judge", "dimension", name="uq_judge_scores_rubric_unit"
        ),
        # A run's scores (progress, retries) and the cascade from a deleted run.
        sa.Index("ix_judge_scores_run", "run_id"),
        # The cascade from a deleted room or event.
        sa.Index("ix_judge_scores_room", "room_id", "seq"),
        sa.Index("ix_judge_scores_event", "event_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="judge_runs.id", ondelete="CASCADE")
    rubric_id: int = Field(foreign_key="judge_rubrics.id", ondelete="CASCADE")
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    event_id: int | None = Field(default=None, foreign_key="events.id", ondelete="CASCADE")
    seq: int | None = None
    unit: str = Field(max_length=40)
    judge: str = Field(max_length=80)
    dimension: str = Field(max_length=40)
    dimension_version: str = Field(max_length=32)
    rubric_version: str = Field(max_length=32)
    value: Any = Field(default=None, sa_type=JSONDoc(), nullable=True)
    reason: str | None = Field(default=None, sa_type=sa.Text)
    prompt: str | None = Field(default=None, sa_type=sa.Text)
    model: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    cost: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_key: str | None = Field(default=None, max_length=64)
    reason_cache_key: str | None = Field(default=None, max_length=64)
    cached: bool = False
    reused_from: int | None = None
    error: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


__all__ = [
    "Analysis",
    "AnalysisAnswer",
    "CodeLabel",
    "JudgeRubric",
    "JudgeRun",
    "JudgeScore",
    "MessageTag",
    "OPEN_ANSWER_WHERE",
]
