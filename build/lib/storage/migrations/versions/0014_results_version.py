"""Results at scale: an index of the archived rooms (the results pages' data version counts
them on every run without reading every room).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ARCHIVED_WHERE = "archived_at IS NOT NULL"


def upgrade() -> None:
    # Partial: its size is the number of archived rooms, and touching a room (every turn) does
    # not write it.
    op.create_index(
        "ix_rooms_archived",
        "rooms",
        ["id"],
        sqlite_where=sa.text(ARCHIVED_WHERE),
        postgresql_where=sa.text(ARCHIVED_WHERE),
    )


def downgrade() -> None:
    op.drop_index("ix_rooms_archived", table_name="rooms")
