"""Participants' pages pushed, not polled (issue 32): on PostgreSQL, a trigger notifies the
channel ``participant_pages`` (``storage.database.notify.PAGES_CHANNEL``) in every transaction
that changes what a participant's page shows: a room's log (``events``), a streaming reply's
draft (``turn_drafts``), a room's row, a participant, a study group, a study note. Every app
process serving participants' pages listens on it and reads its watched pages' markers at once.

Statement-level triggers with an empty payload: PostgreSQL folds a transaction's identical
notices into one, so a transaction that writes 10,000 rows sends one notice. SQLite has no such
channel (an app process sees its own writes at once and polls for others'): nothing to create.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The tables whose changes a participant's page shows, and the changes that matter.
WATCHED = {
    "events": "INSERT OR UPDATE",
    "turn_drafts": "INSERT OR UPDATE OR DELETE",
    "rooms": "UPDATE",
    "study_participants": "UPDATE",
    "study_groups": "INSERT OR UPDATE",
    "study_events": "INSERT",
}

_FUNCTION = """
CREATE OR REPLACE FUNCTION participant_pages_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('participant_pages', '');  -- one notice per transaction
    RETURN NULL;
END;
$$ LANGUAGE plpgsql
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(_FUNCTION)
    for table, changes in WATCHED.items():
        op.execute(
            f"CREATE TRIGGER {table}_participant_pages AFTER {changes} ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION participant_pages_notify()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in WATCHED:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_participant_pages ON {table}")
    op.execute("DROP FUNCTION IF EXISTS participant_pages_notify()")
