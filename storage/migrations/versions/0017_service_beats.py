"""A study's clock judges absence only while the participants' service is up (issue 31): each
app process says "up" every second in ``service_beats``, and a gap in the beats is an outage
(time the service was down is not absence).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-10
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import UTCDateTime

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "service_beats",
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("up_since", UTCDateTime(), nullable=False),
        sa.Column("beat_at", UTCDateTime(), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_service_beats"),
    )


def downgrade() -> None:
    op.drop_table("service_beats")
