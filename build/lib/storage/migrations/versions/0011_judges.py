"""Judges: rubric versions, judge panel runs, and each judge's score per unit and dimension.

Revision ID: 0011
Revises: 0009
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import UTCDateTime

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _rubrics() -> None:
    op.create_table(
        "judge_rubrics",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("version", sa.String(length=32), nullable=False),
        sa.Column("unit", sa.String(length=16), nullable=False),
        sa.Column("definition", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_judge_rubrics"),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name="fk_judge_rubrics_experiment_id_experiments",
            ondelete="CASCADE",
        ),
    )
    # The versions of one rubric of one experiment, newest id first (pickers, re-scoring).
    op.create_index(
        "ix_judge_rubrics_experiment_name", "judge_rubrics", ["experiment_id", "name", "id"]
    )


def _runs() -> None:
    op.create_table(
        "judge_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rubric_id", sa.Integer(), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=True),
        sa.Column("panel", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("asked", sa.Integer(), nullable=False),
        sa.Column("reused", sa.Integer(), nullable=False),
        sa.Column("cached", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_judge_runs"),
        sa.ForeignKeyConstraint(
            ["rubric_id"],
            ["judge_rubrics.id"],
            name="fk_judge_runs_rubric_id_judge_rubrics",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name="fk_judge_runs_experiment_id_experiments",
            ondelete="SET NULL",
        ),
    )
    op.create_index("ix_judge_runs_rubric", "judge_runs", ["rubric_id"])


def _scores() -> None:
    op.create_table(
        "judge_scores",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("rubric_id", sa.Integer(), nullable=False),
        sa.Column("room_id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=True),
        sa.Column("seq", sa.Integer(), nullable=True),
        sa.Column("unit", sa.String(length=40), nullable=False),
        sa.Column("judge", sa.String(length=80), nullable=False),
        sa.Column("dimension", sa.String(length=40), nullable=False),
        sa.Column("dimension_version", sa.String(length=32), nullable=False),
        sa.Column("rubric_version", sa.String(length=32), nullable=False),
        sa.Column("value", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("prompt", sa.Text(), nullable=True),
        sa.Column("model", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("cache_key", sa.String(length=64), nullable=True),
        sa.Column("reason_cache_key", sa.String(length=64), nullable=True),
        sa.Column("cached", sa.Boolean(), nullable=False),
        sa.Column("reused_from", sa.Integer(), nullable=True),
        sa.Column("error", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_judge_scores"),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["judge_runs.id"],
            name="fk_judge_scores_run_id_judge_runs",
            ondelete="CASCADE",
        ),  # fmt: skip
        sa.ForeignKeyConstraint(
            ["rubric_id"],
            ["judge_rubrics.id"],
            name="fk_judge_scores_rubric_id_judge_rubrics",
            ondelete="CASCADE",
        ),  # fmt: skip
        sa.ForeignKeyConstraint(
            ["room_id"], ["rooms.id"], name="fk_judge_scores_room_id_rooms", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["events.id"],
            name="fk_judge_scores_event_id_events",
            ondelete="CASCADE",
        ),  # fmt: skip
        # One score per (rubric version, unit, judge, dimension): asking again replaces it.
        sa.UniqueConstraint(
            "rubric_id", "unit", "judge", "dimension", name="uq_judge_scores_rubric_unit"
        ),
    )
    # A run's scores (progress, retries) and the cascade from a deleted run.
    op.create_index("ix_judge_scores_run", "judge_scores", ["run_id"])
    # The cascades from a deleted room or event.
    op.create_index("ix_judge_scores_room", "judge_scores", ["room_id", "seq"])
    op.create_index("ix_judge_scores_event", "judge_scores", ["event_id"])


def upgrade() -> None:
    _rubrics()
    _runs()
    _scores()


def downgrade() -> None:
    for index in ("ix_judge_scores_event", "ix_judge_scores_room", "ix_judge_scores_run"):
        op.drop_index(index, table_name="judge_scores")
    op.drop_table("judge_scores")
    op.drop_index("ix_judge_runs_rubric", table_name="judge_runs")
    op.drop_table("judge_runs")
    op.drop_index("ix_judge_rubrics_experiment_name", table_name="judge_rubrics")
    op.drop_table("judge_rubrics")
