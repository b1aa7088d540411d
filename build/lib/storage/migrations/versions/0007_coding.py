"""Qualitative coding: codebook labels (per experiment, or per room) and message tags.

Revision ID: 0007
Revises: 0005
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import UTCDateTime

revision: str = "0007"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "code_labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=True),
        sa.Column("room_id", sa.Integer(), nullable=True),
        sa.Column("label", sa.String(length=80), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_code_labels"),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name="fk_code_labels_experiment_id_experiments",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["room_id"], ["rooms.id"], name="fk_code_labels_room_id_rooms", ondelete="CASCADE"
        ),
    )
    # One codebook per experiment / room; the cascades from a deleted one use these too.
    op.create_index("ix_code_labels_experiment", "code_labels", ["experiment_id"])
    op.create_index("ix_code_labels_room", "code_labels", ["room_id"])
    op.create_table(
        "message_tags",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("room_id", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(length=80), nullable=False),
        sa.Column("rating", sa.Integer(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("by", sa.String(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_message_tags"),
        sa.ForeignKeyConstraint(
            ["event_id"], ["events.id"], name="fk_message_tags_event_id_events", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["room_id"], ["rooms.id"], name="fk_message_tags_room_id_rooms", ondelete="CASCADE"
        ),
        # One tag per (message, label, coder); it also serves the cascade from a deleted event.
        sa.UniqueConstraint("event_id", "label", "by", name="uq_message_tags_event_label_by"),
    )
    # A room's tags (transcript, exports) and the cascade from a deleted room.
    op.create_index("ix_message_tags_room", "message_tags", ["room_id", "event_id"])


def downgrade() -> None:
    op.drop_index("ix_message_tags_room", table_name="message_tags")
    op.drop_table("message_tags")
    op.drop_index("ix_code_labels_room", table_name="code_labels")
    op.drop_index("ix_code_labels_experiment", table_name="code_labels")
    op.drop_table("code_labels")
