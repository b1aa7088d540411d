"""Rooms count the changes made to their existing events without the lease (``edits``).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # NOT NULL with a constant server default: a plain ADD COLUMN on SQLite and PostgreSQL alike
    # (existing rooms start at 0: a plan made before the upgrade is not carried across it).
    op.add_column("rooms", sa.Column("edits", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("rooms") as batch:
        batch.drop_column("edits")
