"""Scale: the cluster-wide rate limiter's buckets, and the runnable-rooms index.

Revision ID: 0013
Revises: 0009
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import UTCDateTime

revision: str = "0013"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RUNNABLE_WHERE = "status = 'running'"


def upgrade() -> None:
    op.create_table(
        "rate_buckets",
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("rpm", sa.Float(), nullable=True),
        sa.Column("tpm", sa.Float(), nullable=True),
        sa.Column("requests", sa.Float(), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("paused_until", UTCDateTime(), nullable=True),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_rate_buckets"),
    )
    # The worker's scan: running rooms, least recently touched first. Partial, so its size is
    # the number of running rooms, whatever the number of finished ones.
    op.create_index(
        "ix_rooms_runnable",
        "rooms",
        ["updated_at", "id"],
        sqlite_where=sa.text(RUNNABLE_WHERE),
        postgresql_where=sa.text(RUNNABLE_WHERE),
    )


def downgrade() -> None:
    op.drop_index("ix_rooms_runnable", table_name="rooms")
    op.drop_table("rate_buckets")
