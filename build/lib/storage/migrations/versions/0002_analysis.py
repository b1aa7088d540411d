"""Analysis tables: follow-up questions run over transcripts, and one answer per room.

Revision ID: 0002
Revises: 0001
Create Date: 2025-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import JSONDoc, UTCDateTime

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "analyses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("question", JSONDoc(), nullable=False),
        sa.Column("model", JSONDoc(), nullable=True),
        sa.Column("experiment_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_analyses"),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name="fk_analyses_experiment_id_experiments",
            ondelete="SET NULL",
        ),
    )
    op.create_table(
        "analysis_answers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("analysis_id", sa.Integer(), nullable=False),
        sa.Column("room_id", sa.Integer(), nullable=False),
        sa.Column("answer", JSONDoc(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("model", sa.String(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("error", JSONDoc(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_analysis_answers"),
        sa.ForeignKeyConstraint(
            ["analysis_id"],
            ["analyses.id"],
            name="fk_analysis_answers_analysis_id_analyses",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["room_id"],
            ["rooms.id"],
            name="fk_analysis_answers_room_id_rooms",
            ondelete="CASCADE",
        ),
        # One answer per (analysis, room): re-running a question replaces the answer.
        sa.UniqueConstraint("analysis_id", "room_id", name="uq_analysis_answers_analysis_room"),
    )
    # Deleting a room cascades here; without this index SQLite scans the table for every room.
    op.create_index("ix_analysis_answers_room", "analysis_answers", ["room_id"])


def downgrade() -> None:
    op.drop_index("ix_analysis_answers_room", table_name="analysis_answers")
    op.drop_table("analysis_answers")
    op.drop_table("analyses")
