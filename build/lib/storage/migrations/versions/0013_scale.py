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
down_revision: str | None = "0012"
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
    # Deleting rooms (an experiment's, batched) sets their forks' parent to NULL: indexed, not
    # a scan of the whole table per deleted room.
    op.create_index("ix_rooms_parent", "rooms", ["parent_room_id"])
    if op.get_bind().dialect.name == "postgresql":
        # LISTEN/NOTIFY (storage/notify.py): a room that becomes running wakes the workers.
        op.execute(_NOTIFY_FUNCTION)
        op.execute(
            "CREATE TRIGGER rooms_work_insert AFTER INSERT ON rooms FOR EACH ROW "
            "WHEN (NEW.status = 'running') EXECUTE FUNCTION rooms_notify_work()"
        )
        op.execute(
            "CREATE TRIGGER rooms_work_update AFTER UPDATE OF status ON rooms FOR EACH ROW "
            "WHEN (NEW.status = 'running' AND OLD.status IS DISTINCT FROM NEW.status) "
            "EXECUTE FUNCTION rooms_notify_work()"
        )


_NOTIFY_FUNCTION = """
CREATE OR REPLACE FUNCTION rooms_notify_work() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('rooms_work', '');  -- one notice per transaction, whatever the rows
    RETURN NULL;
END;
$$ LANGUAGE plpgsql
"""


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS rooms_work_update ON rooms")
        op.execute("DROP TRIGGER IF EXISTS rooms_work_insert ON rooms")
        op.execute("DROP FUNCTION IF EXISTS rooms_notify_work()")
    op.drop_index("ix_rooms_parent", table_name="rooms")
    op.drop_index("ix_rooms_runnable", table_name="rooms")
    op.drop_table("rate_buckets")
