"""Participants' pages at scale: an index of a group's study events, so the page's change
marker (``storage.participant_marker``, read about once a second by every open participant page)
finds a group's newest note with one index probe instead of reading the study's log.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_study_events_group", "study_events", ["group_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_study_events_group", table_name="study_events")
