"""The study as a research instrument (issue 34): a preregistered study's frozen bundle and its
hash, its amendments, the consent texts people agreed to (one row per version), each person's
consent version and withdrawal time, and the bot and AI-use signals their page recorded.

Revision ID: 0019
Revises: 0017
Create Date: 2026-12-12
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.coltypes import UTCDateTime

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _fk(table: str, column: str, target: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}", ondelete=ondelete
    )


def upgrade() -> None:
    op.add_column("studies", sa.Column("bundle", sa.JSON(none_as_null=True), nullable=True))
    op.add_column("studies", sa.Column("bundle_hash", sa.String(length=64), nullable=True))
    op.add_column("study_participants", sa.Column("consent_version", sa.Integer(), nullable=True))
    op.add_column("study_participants", sa.Column("withdrawn_at", UTCDateTime(), nullable=True))
    op.create_table(
        "consent_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("text_hash", sa.String(length=64), nullable=False),
        sa.Column("text", sa.String(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_consent_versions"),
        _fk("consent_versions", "study_id", "studies", "CASCADE"),
        sa.UniqueConstraint("study_id", "text_hash", name="uq_consent_versions_hash"),
        sa.UniqueConstraint("study_id", "version", name="uq_consent_versions_version"),
    )
    op.create_table(
        "study_amendments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("changes", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("bundle_hash", sa.String(length=64), nullable=False),
        sa.Column("by", sa.String(length=200), nullable=True),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_study_amendments"),
        _fk("study_amendments", "study_id", "studies", "CASCADE"),
        sa.UniqueConstraint("study_id", "number", name="uq_study_amendments_number"),
    )
    op.create_table(
        "participant_signals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("room_id", sa.Integer(), nullable=True),
        sa.Column("seq", sa.Integer(), nullable=True),
        sa.Column("data", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_participant_signals"),
        _fk("participant_signals", "study_id", "studies", "CASCADE"),
        _fk("participant_signals", "participant_id", "study_participants", "CASCADE"),
    )
    op.create_index(
        "ix_participant_signals_participant", "participant_signals", ["participant_id", "id"]
    )
    op.create_index("ix_participant_signals_study", "participant_signals", ["study_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_participant_signals_study", table_name="participant_signals")
    op.drop_index("ix_participant_signals_participant", table_name="participant_signals")
    op.drop_table("participant_signals")
    op.drop_table("study_amendments")
    op.drop_table("consent_versions")
    with op.batch_alter_table("study_participants") as batch:
        batch.drop_column("withdrawn_at")
        batch.drop_column("consent_version")
    with op.batch_alter_table("studies") as batch:
        batch.drop_column("bundle_hash")
        batch.drop_column("bundle")
