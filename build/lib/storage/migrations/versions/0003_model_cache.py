"""The persistent model cache: one EDSL cache entry per cache key.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import JSONDoc, UTCDateTime

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "model_cache",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("service", sa.String(), nullable=True),
        sa.Column("entry", JSONDoc(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_model_cache"),
    )


def downgrade() -> None:
    op.drop_table("model_cache")
