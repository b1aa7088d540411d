"""Partial drafts of streaming turns, and requests to stop them (``turn_drafts``).

Revision ID: 0012
Revises: 0009
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import UTCDateTime

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "turn_drafts",
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("room_id", sa.Integer(), nullable=False),
        sa.Column("token", sa.Integer(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("writes", sa.Integer(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("stop_by", sa.String(), nullable=True),
        sa.Column("stop_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("event_id", name="pk_turn_drafts"),
        sa.ForeignKeyConstraint(
            ["event_id"], ["events.id"], name="fk_turn_drafts_event_id_events", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["room_id"], ["rooms.id"], name="fk_turn_drafts_room_id_rooms", ondelete="CASCADE"
        ),
    )
    # A room's draft (the Room page) and the cascade from a deleted room.
    op.create_index("ix_turn_drafts_room", "turn_drafts", ["room_id"])


def downgrade() -> None:
    op.drop_index("ix_turn_drafts_room", table_name="turn_drafts")
    op.drop_table("turn_drafts")
