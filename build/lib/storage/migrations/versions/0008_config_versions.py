"""Room configuration versions: a room's settings edited after creation, every version kept.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import JSONDoc, UTCDateTime

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "room_config_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("room_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("config", JSONDoc(), nullable=False),
        sa.Column("by", sa.String(), nullable=True),
        sa.Column("changes", JSONDoc(), nullable=True),
        sa.Column("from_seq", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_room_config_versions"),
        sa.ForeignKeyConstraint(
            ["room_id"],
            ["rooms.id"],
            name="fk_room_config_versions_room_id_rooms",
            ondelete="CASCADE",
        ),
        # One row per (room, version); also the index a room's versions are read and deleted by.
        sa.UniqueConstraint("room_id", "version", name="uq_room_config_versions_room_version"),
    )


def downgrade() -> None:
    op.drop_table("room_config_versions")
