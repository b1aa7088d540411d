"""Initial schema: experiments, rooms, events, leases, agent_profiles.

Revision ID: 0001
Revises:
Create Date: 2025-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import JSONDoc, UTCDateTime

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPEN_TURN_WHERE = "state IN ('running', 'waiting', 'interrupted')"


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "experiments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("config", JSONDoc(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_experiments"),
    )
    op.create_table(
        "rooms",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("stop_reason", sa.Text(), nullable=True),
        sa.Column("config", JSONDoc(), nullable=False),
        sa.Column("parent_room_id", sa.Integer(), nullable=True),
        sa.Column("parent_seq", sa.Integer(), nullable=True),
        sa.Column("experiment_id", sa.Integer(), nullable=True),
        sa.Column("condition", sa.String(), nullable=True),
        sa.Column("replicate", sa.Integer(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_rooms"),
        sa.ForeignKeyConstraint(
            ["parent_room_id"],
            ["rooms.id"],
            name="fk_rooms_parent_room_id_rooms",
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name="fk_rooms_experiment_id_experiments",
            ondelete="SET NULL",
        ),
    )
    # Runnable-room scan (status='running', least recently touched first) and list_rooms(status).
    op.create_index("ix_rooms_status_updated", "rooms", ["status", "updated_at"])
    # Rooms of one experiment, newest id first.
    op.create_index("ix_rooms_experiment", "rooms", ["experiment_id", "id"])

    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("room_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("activity", sa.Integer(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("speaker", sa.String(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("words", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(), nullable=True),
        sa.Column("request_id", sa.String(), nullable=True),
        sa.Column("parent_event_id", sa.Integer(), nullable=True),
        sa.Column("saw", JSONDoc(), nullable=True),
        sa.Column("model", sa.String(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("latency", sa.Float(), nullable=True),
        sa.Column("error", JSONDoc(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=True),
        sa.Column("visible_to", JSONDoc(), nullable=True),
        sa.Column("data", JSONDoc(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sa.ForeignKeyConstraint(
            ["room_id"], ["rooms.id"], name="fk_events_room_id_rooms", ondelete="CASCADE"
        ),
        # The log's order: events after a seq, latest seq, fork copies.
        sa.UniqueConstraint("room_id", "seq", name="uq_events_room_seq"),
        # Idempotency: one message or turn per request id in a room.
        sa.UniqueConstraint("room_id", "request_id", name="uq_events_room_request_id"),
    )
    # "Is a turn open in this room?" on every claim; partial, so it only holds open turns.
    op.create_index(
        "ix_events_open_turns",
        "events",
        ["room_id"],
        sqlite_where=sa.text(OPEN_TURN_WHERE),
        postgresql_where=sa.text(OPEN_TURN_WHERE),
    )

    op.create_table(
        "leases",
        sa.Column("room_id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(), nullable=True),
        sa.Column("token", sa.Integer(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("acquired_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("room_id", name="pk_leases"),
        sa.ForeignKeyConstraint(
            ["room_id"], ["rooms.id"], name="fk_leases_room_id_rooms", ondelete="CASCADE"
        ),
    )

    op.create_table(
        "agent_profiles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("traits", JSONDoc(), nullable=False),
        sa.Column("instruction", sa.Text(), nullable=False),
        sa.Column("model", JSONDoc(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_agent_profiles"),
        sa.UniqueConstraint("name", name="uq_agent_profiles_name"),
    )


def downgrade() -> None:
    op.drop_table("agent_profiles")
    op.drop_table("leases")
    op.drop_index("ix_events_open_turns", table_name="events")
    op.drop_table("events")
    op.drop_index("ix_rooms_experiment", table_name="rooms")
    op.drop_index("ix_rooms_status_updated", table_name="rooms")
    op.drop_table("rooms")
    op.drop_table("experiments")
