"""Studies with real participants: studies, their groups, participants, tokens and events.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import UTCDateTime

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _fk(table: str, column: str, target: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}", ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "studies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("code", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("definition", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("cap", sa.Integer(), nullable=True),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_studies"),
        _fk("studies", "experiment_id", "experiments", "SET NULL"),
        sa.UniqueConstraint("code", name="uq_studies_code"),
    )
    op.create_table(
        "study_groups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("condition", sa.String(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("room_id", sa.Integer(), nullable=True),
        sa.Column("seats", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("assignment", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("ended_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_study_groups"),
        _fk("study_groups", "study_id", "studies", "CASCADE"),
        _fk("study_groups", "room_id", "rooms", "SET NULL"),
        # A group number is drawn once per condition: two lobby ticks cannot both form it.
        sa.UniqueConstraint("study_id", "condition", "number", name="uq_study_groups_number"),
    )
    op.create_table(
        "study_participants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pseudonym", sa.String(length=40), nullable=False),
        sa.Column("recruitment_id", sa.String(length=200), nullable=True),
        sa.Column("recruitment", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("labels", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("stage", sa.String(length=20), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=True),
        sa.Column("condition", sa.String(), nullable=True),
        sa.Column("seat", sa.String(), nullable=True),
        sa.Column("exit_status", sa.String(length=20), nullable=True),
        sa.Column("exit_code", sa.String(length=64), nullable=True),
        sa.Column("pre_survey", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("post_survey", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("posts", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("joined_at", UTCDateTime(), nullable=False),
        sa.Column("consented_at", UTCDateTime(), nullable=True),
        sa.Column("lobby_at", UTCDateTime(), nullable=True),
        sa.Column("assigned_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_study_participants"),
        _fk("study_participants", "study_id", "studies", "CASCADE"),
        _fk("study_participants", "group_id", "study_groups", "SET NULL"),
        sa.UniqueConstraint("study_id", "pseudonym", name="uq_study_participants_pseudonym"),
        # The same PROLIFIC_PID never gets two seats (NULLs are distinct).
        sa.UniqueConstraint(
            "study_id", "recruitment_id", name="uq_study_participants_recruitment_id"
        ),
    )
    # The lobby and the monitor: a study's participants at one stage.
    op.create_index("ix_study_participants_stage", "study_participants", ["study_id", "stage"])
    op.create_table(
        "study_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name="pk_study_tokens"),
        _fk("study_tokens", "participant_id", "study_participants", "CASCADE"),
    )
    op.create_index("ix_study_tokens_participant", "study_tokens", ["participant_id"])
    op.create_table(
        "study_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=True),
        sa.Column("group_id", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("data", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_study_events"),
        _fk("study_events", "study_id", "studies", "CASCADE"),
        _fk("study_events", "participant_id", "study_participants", "CASCADE"),
        _fk("study_events", "group_id", "study_groups", "SET NULL"),
    )
    op.create_index("ix_study_events_study", "study_events", ["study_id", "id"])
    op.create_index("ix_study_events_participant", "study_events", ["participant_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_study_events_participant", table_name="study_events")
    op.drop_index("ix_study_events_study", table_name="study_events")
    op.drop_table("study_events")
    op.drop_index("ix_study_tokens_participant", table_name="study_tokens")
    op.drop_table("study_tokens")
    op.drop_index("ix_study_participants_stage", table_name="study_participants")
    op.drop_table("study_participants")
    op.drop_table("study_groups")
    op.drop_table("studies")
