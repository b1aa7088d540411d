"""Analyses run in the background: each answer row has a state, and a claim while it is asked.

An analysis stores its planned rooms as answer rows in the state ``planned`` (not asked yet);
a runner claims some (``asking``, ``claimed_by``, ``claimed_until``) and stores each as
``answered`` or ``failed``. Rows stored before this revision are answers already asked:
``failed`` where an error was stored, ``answered`` otherwise.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import UTCDateTime

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPEN_ANSWER_WHERE = "state IN ('planned', 'asking')"


def upgrade() -> None:
    # NOT NULL with a constant server default: a plain ADD COLUMN on SQLite and PostgreSQL alike.
    op.add_column(
        "analysis_answers",
        sa.Column("state", sa.String(), nullable=False, server_default="answered"),
    )
    op.add_column("analysis_answers", sa.Column("claimed_by", sa.String(), nullable=True))
    op.add_column("analysis_answers", sa.Column("claimed_until", UTCDateTime(), nullable=True))
    op.execute("UPDATE analysis_answers SET state = 'failed' WHERE error IS NOT NULL")
    # The runner's scan: answers still to ask. Partial, so its size is the work left, whatever
    # the number of answers ever stored.
    op.create_index(
        "ix_analysis_answers_open",
        "analysis_answers",
        ["analysis_id", "room_id"],
        sqlite_where=sa.text(OPEN_ANSWER_WHERE),
        postgresql_where=sa.text(OPEN_ANSWER_WHERE),
    )


def downgrade() -> None:
    op.drop_index("ix_analysis_answers_open", table_name="analysis_answers")
    with op.batch_alter_table("analysis_answers") as batch:
        batch.drop_column("claimed_until")
        batch.drop_column("claimed_by")
        batch.drop_column("state")
