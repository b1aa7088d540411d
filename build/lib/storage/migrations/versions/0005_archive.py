"""Archiving: rooms and experiments get ``archived_at`` (hidden from lists unless asked for).

Revision ID: 0005
Revises: 0003
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import UTCDateTime

revision: str = "0005"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable columns without a default: a plain ADD COLUMN on SQLite and PostgreSQL alike.
    op.add_column("rooms", sa.Column("archived_at", UTCDateTime(), nullable=True))
    op.add_column("experiments", sa.Column("archived_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("archived_at")
    with op.batch_alter_table("rooms") as batch:
        batch.drop_column("archived_at")
