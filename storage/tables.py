"""Every table of the app, as SQLModel models (one module, one place to read the schema).

The schema is created and changed only by the migrations in ``storage/migrations`` (a test builds a
blank database from them and compares it with these models). Rows returned by the repository are
*detached snapshots* of these models: reading their attributes is fine, assigning to them writes
nothing (call a repository function instead).

Timestamps are UTC and timezone-aware (:class:`~storage.coltypes.UTCDateTime`). JSON columns hold
plain JSON (dicts, lists, strings, numbers); configuration documents pass the secret guard first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import configure_mappers
from sqlmodel import Field, SQLModel

from storage.coltypes import JSONDoc, UTCDateTime, utcnow
from vocabulary import OPEN_TURN_STATES

# Deterministic constraint names, so migrations can name what they alter and compare cleanly.
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = SQLModel.metadata

OPEN_TURN_WHERE = "state IN ({})".format(", ".join(f"'{state}'" for state in OPEN_TURN_STATES))
"""The partial-index predicate for open turns, built from ``OPEN_TURN_STATES``."""
RUNNABLE_WHERE = "status = 'running'"
ARCHIVED_WHERE = "archived_at IS NOT NULL"
"""The partial-index predicate of the runnable-rooms scan (revision 0013)."""
OPEN_ANSWER_WHERE = "state IN ('planned', 'asking')"
"""The partial-index predicate of the analysis runner's scan: answers still to ask (0015)."""


class Experiment(SQLModel, table=True):
    """A batch of rooms: a template room x variations x replicates (the Experiments page)."""

    __tablename__ = "experiments"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    status: str = Field(default="draft")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    # Set when a person archives it (revision 0005): hidden from pickers unless asked for.
    archived_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class Room(SQLModel, table=True):
    """A persisted room. ``config`` holds everything needed to rebuild its runtime: roster of agent
    specs, planner and settings, termination, prompt template, context policy, model binding spec,
    seed and the moderated flag (storage treats it as an opaque, secret-free JSON object)."""

    __tablename__ = "rooms"
    __table_args__ = (
        # Runnable-room scan (status='running', least recently touched first) and list_rooms(status).
        sa.Index("ix_rooms_status_updated", "status", "updated_at"),
        # Rooms of one experiment (Experiments and Results pages), newest id first.
        sa.Index("ix_rooms_experiment", "experiment_id", "id"),
        # Deleting a room sets its forks' parent_room_id to NULL: without this index each
        # deleted room scans the whole table (deleting a 1,000-room experiment took 7.5 s).
        sa.Index("ix_rooms_parent", "parent_room_id"),
        # The worker's scan in its exact order, over running rooms only (revision 0013): its
        # size and cost follow the running rooms, not the finished ones.
        sa.Index(
            "ix_rooms_runnable",
            "updated_at",
            "id",
            sqlite_where=sa.text(RUNNABLE_WHERE),
            postgresql_where=sa.text(RUNNABLE_WHERE),
        ),
        # The archived rooms only (revision 0014): the results pages' data version counts them
        # on every run; without it, a scan of every room with its config (0.15-0.6 s at 100,000).
        sa.Index(
            "ix_rooms_archived",
            "id",
            sqlite_where=sa.text(ARCHIVED_WHERE),
            postgresql_where=sa.text(ARCHIVED_WHERE),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    name: str
    status: str = Field(default="idle")
    stop_reason: str | None = Field(default=None, sa_type=sa.Text)
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    # A fork records where it came from; the parent may be deleted later (then NULL).
    parent_room_id: int | None = Field(default=None, foreign_key="rooms.id", ondelete="SET NULL")
    parent_seq: int | None = None
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="SET NULL"
    )
    condition: str | None = None
    replicate: int | None = None
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    # Set when a person archives it (revision 0005): hidden from Home and pickers by default.
    archived_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    # Changes to events already in the log made without the room's lease (a person's decision on
    # a turn, a stop), revision 0009. An append moves the last seq instead, and a lease-fenced
    # write is the lease holder's own: with the last seq, this tells a writer whether any event
    # of the view it planned from changed (the fences compare both).
    edits: int = Field(default=0, sa_column_kwargs={"server_default": "0"})


class Event(SQLModel, table=True):
    """One entry of a room's append-only log: a human message, an agent turn, a pass or a system
    event. ``(room_id, seq)`` is unique and seqs are contiguous from 1; ``request_id`` is unique per
    room (the same id again is the same message or turn)."""

    __tablename__ = "events"
    __table_args__ = (
        # The log's order: events after a seq (live polling), latest seq (max), fork copies.
        sa.UniqueConstraint("room_id", "seq", name="uq_events_room_seq"),
        # Idempotency: one message or turn per request id in a room (NULLs are distinct).
        sa.UniqueConstraint("room_id", "request_id", name="uq_events_room_request_id"),
        # "Is a turn open in this room?" on every claim; partial, so it stays tiny (only open turns).
        sa.Index(
            "ix_events_open_turns",
            "room_id",
            sqlite_where=sa.text(OPEN_TURN_WHERE),
            postgresql_where=sa.text(OPEN_TURN_WHERE),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    seq: int
    activity: int = 0
    round: int = 0
    kind: str
    speaker: str
    content: str = Field(default="", sa_type=sa.Text)
    # Derived from content by storage on every write (len(content.split())): summaries stay SQL.
    words: int = 0
    state: str | None = None
    request_id: str | None = None
    # Same room by construction (forks remap it). Deliberately no foreign key: SQLite would then
    # need one more index on this hot table to delete a room's events without an O(n^2) scan.
    parent_event_id: int | None = None
    saw: list[int] | None = Field(default=None, sa_type=JSONDoc())
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    latency: float | None = None
    error: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    attempts: int = 0
    next_attempt_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    visible_to: list[str] | None = Field(default=None, sa_type=JSONDoc())
    data: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class Lease(SQLModel, table=True):
    """Who may drive a room. One row per room, never deleted while the room exists, so ``token``
    only ever grows: a released or expired lease keeps its token and the next holder gets token+1."""

    __tablename__ = "leases"

    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE", primary_key=True)
    owner: str | None = None
    token: int = 0
    expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    acquired_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class RoomConfigVersion(SQLModel, table=True):
    """One version of a room's configuration (revision 0008). A room edited after creation keeps
    every version here, version 1 being the one it was created with; ``rooms.config`` is always
    the newest. ``from_seq``: the seq of the ``config_changed`` system event that applied it (0
    for version 1); turns claimed after that event use it."""

    __tablename__ = "room_config_versions"
    __table_args__ = (
        # One row per (room, version); also the index a room's versions are read and deleted by.
        sa.UniqueConstraint("room_id", "version", name="uq_room_config_versions_room_version"),
    )

    id: int | None = Field(default=None, primary_key=True)
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    version: int
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    by: str | None = None
    changes: list[str] | None = Field(default=None, sa_type=JSONDoc())
    from_seq: int = 0
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class AgentProfile(SQLModel, table=True):
    """An agent in the web app's library (name, traits, persona instruction, model spec)."""

    __tablename__ = "agent_profiles"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True)
    traits: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    instruction: str = Field(default="", sa_type=sa.Text)
    model: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class Analysis(SQLModel, table=True):
    """A follow-up question run over transcripts (e.g. "was a deal reached?"). Revision 0002."""

    __tablename__ = "analyses"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    question: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    model: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="SET NULL"
    )
    status: str = Field(default="pending")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class AnalysisAnswer(SQLModel, table=True):
    """One room's answer to an analysis question (at most one per analysis and room).

    Revision 0015: ``state`` is ``planned`` (not asked yet), ``asking`` (claimed by a runner,
    ``claimed_by`` until ``claimed_until``), ``answered`` or ``failed`` (``error`` says why)."""

    __tablename__ = "analysis_answers"
    __table_args__ = (
        # One answer per (analysis, room): re-running a question replaces the answer.
        sa.UniqueConstraint("analysis_id", "room_id", name="uq_analysis_answers_analysis_room"),
        # Deleting a room cascades here; without this index SQLite scans the table per room.
        sa.Index("ix_analysis_answers_room", "room_id"),
        # The runner's scan over the answers still to ask (revision 0015).
        sa.Index(
            "ix_analysis_answers_open",
            "analysis_id",
            "room_id",
            sqlite_where=sa.text(OPEN_ANSWER_WHERE),
            postgresql_where=sa.text(OPEN_ANSWER_WHERE),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    analysis_id: int = Field(foreign_key="analyses.id", ondelete="CASCADE")
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    answer: Any = Field(default=None, sa_type=JSONDoc(), nullable=True)
    comment: str | None = Field(default=None, sa_type=sa.Text)
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    error: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    state: str = Field(default="answered", sa_column_kwargs={"server_default": "answered"})
    claimed_by: str | None = None
    claimed_until: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class CodeLabel(SQLModel, table=True):
    """A label of a qualitative-coding codebook: an experiment's (shared by its rooms) or, for a
    room outside any experiment, the room's own. Revision 0007."""

    __tablename__ = "code_labels"
    __table_args__ = (
        # The codebook of one experiment / one room; deleting either cascades through these.
        sa.Index("ix_code_labels_experiment", "experiment_id"),
        sa.Index("ix_code_labels_room", "room_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="CASCADE"
    )
    room_id: int | None = Field(default=None, foreign_key="rooms.id", ondelete="CASCADE")
    label: str = Field(max_length=80)
    description: str | None = Field(default=None, sa_type=sa.Text)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class MessageTag(SQLModel, table=True):
    """A researcher's code on one message: a label of the codebook, an optional rating and note,
    who and when. Never part of event data (events stay the room's log). Revision 0007."""

    __tablename__ = "message_tags"
    __table_args__ = (
        # One tag per (message, label, coder): tagging again updates the rating and note. It also
        # serves the cascade from a deleted event.
        sa.UniqueConstraint("event_id", "label", "by", name="uq_message_tags_event_label_by"),
        # A room's tags (transcript, exports) and the cascade from a deleted room.
        sa.Index("ix_message_tags_room", "room_id", "event_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    event_id: int = Field(foreign_key="events.id", ondelete="CASCADE")
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    label: str = Field(max_length=80)
    rating: int | None = None
    note: str | None = Field(default=None, sa_type=sa.Text)
    by: str
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class CachedResponse(SQLModel, table=True):
    """One model answer of the persistent model cache (EDSL's ``CacheEntry``, as its
    ``to_dict()``), found by EDSL's cache key: a hash of the model, its parameters, both prompts
    and the iteration. Written once (a second writer of the same key changes nothing), shared by
    every process using the database. Revision 0003."""

    __tablename__ = "model_cache"

    key: str = Field(primary_key=True, max_length=64)
    model: str
    service: str | None = None
    entry: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


# --- judges (revision 0011): rubrics, judge panel runs, and each judge's score per unit -----------


class JudgeRubric(SQLModel, table=True):
    """One version of a rubric (``conversation.analysis.rubrics``): its name, the unit it scores,
    its content hash and its definition. A rubric belongs to an experiment (its rooms are scored
    with it) or to none. An edit stores a new row; scores keep the row they were asked under."""

    __tablename__ = "judge_rubrics"
    __table_args__ = (
        # The versions of one rubric of one experiment, newest id first (pickers, re-scoring).
        sa.Index("ix_judge_rubrics_experiment_name", "experiment_id", "name", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="CASCADE"
    )
    name: str = Field(max_length=120)
    version: str = Field(max_length=32)
    unit: str = Field(max_length=16)
    definition: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class JudgeRun(SQLModel, table=True):
    """A judge panel asked about some units with one rubric version: the panel (names and model
    specs), its status and what it took (asked, reused, from the cache, failed, spend)."""

    __tablename__ = "judge_runs"
    __table_args__ = (sa.Index("ix_judge_runs_rubric", "rubric_id"),)

    id: int | None = Field(default=None, primary_key=True)
    rubric_id: int = Field(foreign_key="judge_rubrics.id", ondelete="CASCADE")
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="SET NULL"
    )
    panel: list[Any] = Field(default_factory=list, sa_type=JSONDoc())
    status: str = Field(default="running")
    asked: int = 0
    reused: int = 0
    cached: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class JudgeScore(SQLModel, table=True):
    """One judge's score of one unit (a message, or a whole room: ``seq`` NULL) on one dimension
    of one rubric version, with its reason, the prompt, the model, the cost and EDSL's cache
    key; or the error that kept it from being had (``value`` NULL). ``reused_from``: the score
    of an earlier version it was carried over from (the dimension did not change). The two cache
    keys (the score question's and the reason question's) let a forced re-run answer from the
    model cache."""

    __tablename__ = "judge_scores"
    __table_args__ = (
        # One score per (rubric version, unit, judge, dimension): asking again replaces it.
        sa.UniqueConstraint(
            "rubric_id", "unit", "judge", "dimension", name="uq_judge_scores_rubric_unit"
        ),
        # A run's scores (progress, retries) and the cascade from a deleted run.
        sa.Index("ix_judge_scores_run", "run_id"),
        # The cascade from a deleted room or event.
        sa.Index("ix_judge_scores_room", "room_id", "seq"),
        sa.Index("ix_judge_scores_event", "event_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="judge_runs.id", ondelete="CASCADE")
    rubric_id: int = Field(foreign_key="judge_rubrics.id", ondelete="CASCADE")
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    event_id: int | None = Field(default=None, foreign_key="events.id", ondelete="CASCADE")
    seq: int | None = None
    unit: str = Field(max_length=40)
    judge: str = Field(max_length=80)
    dimension: str = Field(max_length=40)
    dimension_version: str = Field(max_length=32)
    rubric_version: str = Field(max_length=32)
    value: Any = Field(default=None, sa_type=JSONDoc(), nullable=True)
    reason: str | None = Field(default=None, sa_type=sa.Text)
    prompt: str | None = Field(default=None, sa_type=sa.Text)
    model: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    cost: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_key: str | None = Field(default=None, max_length=64)
    reason_cache_key: str | None = Field(default=None, max_length=64)
    cached: bool = False
    reused_from: int | None = None
    error: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


# --- streaming drafts (revision 0012) ---------------------------------------------------------


class TurnDraft(SQLModel, table=True):
    """The partial text of a running turn while its reply streams (issue 20), and a person's
    request to stop that draft. Never a message: the log (``events``) holds committed turns
    only, so prompts and exports never read this table. One row per turn, written by the lease
    holder (``token``: a row of another token is a dead holder's, read as no draft), removed
    when the turn commits. Revision 0012."""

    __tablename__ = "turn_drafts"
    __table_args__ = (sa.Index("ix_turn_drafts_room", "room_id"),)

    event_id: int = Field(primary_key=True, foreign_key="events.id", ondelete="CASCADE")
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    token: int | None = None
    text: str = Field(default="", sa_type=sa.Text)
    writes: int = 0
    started_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    stop_by: str | None = None
    stop_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


# -- Scale (issue 23, revision 0013): the cluster-wide rate limiter --------------------------------


class RateBucket(SQLModel, table=True):
    """One token bucket of the cluster-wide model rate limiter (revision 0013): the requests and
    tokens a provider (or one of its models) may still take, refilled at the configured rates by
    whoever touches it next. Shared by every worker and the app; a 429 sets ``paused_until`` so
    every process waits, not just the one that saw it."""

    __tablename__ = "rate_buckets"

    key: str = Field(primary_key=True, max_length=300)
    # The rates last configured (per minute), for display; the caller's setting is what counts.
    rpm: float | None = None
    tpm: float | None = None
    requests: float = 0.0
    tokens: float = 0.0
    paused_until: datetime | None = Field(default=None, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


# --- studies with real participants (revision 0010, issue 21) -----------------------------------


class Study(SQLModel, table=True):
    """A study: an experiment whose rooms have human seats (docs/studies.md). ``definition`` is
    the study file as written; ``version`` counts its edits (each participant keeps the version
    in force when they were assigned). ``code`` is the study's id in the participant link."""

    __tablename__ = "studies"
    __table_args__ = (sa.UniqueConstraint("code", name="uq_studies_code"),)

    id: int | None = Field(default=None, primary_key=True)
    code: str = Field(max_length=40)
    name: str
    definition: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    version: int = 1
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="SET NULL"
    )
    status: str = Field(default="open", max_length=20)
    cap: int | None = None
    seed: int = Field(default=0, sa_type=sa.BigInteger)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class StudyGroup(SQLModel, table=True):
    """One group of a study: a condition, its number (the room's replicate), its room, who holds
    each seat (``{seat: participant id or "agent"}``) and the recorded randomisation."""

    __tablename__ = "study_groups"
    __table_args__ = (
        # A group number is drawn once per condition: two lobby ticks at once cannot both form it.
        sa.UniqueConstraint("study_id", "condition", "number", name="uq_study_groups_number"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="studies.id", ondelete="CASCADE")
    condition: str
    number: int
    room_id: int | None = Field(default=None, foreign_key="rooms.id", ondelete="SET NULL")
    seats: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    status: str = Field(default="running", max_length=20)
    assignment: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    started_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    ended_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class StudyParticipant(SQLModel, table=True):
    """One person in a study: a pseudonym (the only id exports carry), the recruitment id kept
    apart for payment, the link's other labels, where they are (``stage``) and how they left."""

    __tablename__ = "study_participants"
    __table_args__ = (
        sa.UniqueConstraint("study_id", "pseudonym", name="uq_study_participants_pseudonym"),
        # The same PROLIFIC_PID never gets two seats (NULLs, people without one, are distinct).
        sa.UniqueConstraint(
            "study_id", "recruitment_id", name="uq_study_participants_recruitment_id"
        ),
        # The lobby and the monitor: a study's participants at one stage.
        sa.Index("ix_study_participants_stage", "study_id", "stage"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="studies.id", ondelete="CASCADE")
    pseudonym: str = Field(max_length=40)
    recruitment_id: str | None = Field(default=None, max_length=200)
    recruitment: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    labels: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    stage: str = Field(default="consent", max_length=20)
    version: int = 1
    group_id: int | None = Field(default=None, foreign_key="study_groups.id", ondelete="SET NULL")
    condition: str | None = None
    seat: str | None = None
    exit_status: str | None = Field(default=None, max_length=20)
    exit_code: str | None = Field(default=None, max_length=64)
    pre_survey: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    post_survey: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    # No longer written: a participant's posting rate is a bucket of ``rate_buckets`` (issue 30).
    posts: list[float] | None = Field(default=None, sa_type=JSONDoc())
    joined_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    consented_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    lobby_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    assigned_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_seen_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class StudyToken(SQLModel, table=True):
    """A participant's token, as its sha256 (the token itself is never stored): a reload, a
    second tab or a second join with the same PROLIFIC_PID each hold one of the same person's."""

    __tablename__ = "study_tokens"
    __table_args__ = (sa.Index("ix_study_tokens_participant", "participant_id"),)

    token_hash: str = Field(primary_key=True, max_length=64)
    participant_id: int = Field(foreign_key="study_participants.id", ondelete="CASCADE")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class StudyEvent(SQLModel, table=True):
    """The study's own log: joins, consents, assignments (seed and eligible set), lobby
    timeouts, dropouts and what was done about them, removals, help messages, exits."""

    __tablename__ = "study_events"
    __table_args__ = (
        sa.Index("ix_study_events_study", "study_id", "id"),
        sa.Index("ix_study_events_participant", "participant_id", "id"),
        # A participant page's change marker: the newest note of the participant's group.
        sa.Index("ix_study_events_group", "group_id", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="studies.id", ondelete="CASCADE")
    participant_id: int | None = Field(
        default=None, foreign_key="study_participants.id", ondelete="CASCADE"
    )
    group_id: int | None = Field(default=None, foreign_key="study_groups.id", ondelete="SET NULL")
    kind: str = Field(max_length=40)
    data: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class ServiceBeat(SQLModel, table=True):
    """A service's continuity (revision 0017): when it last said it was up (``beat_at``) and since
    when it has been up without a gap (``up_since``). Every app process beats the participants'
    service (``participants``) every second; the study clock judges absence only while it is
    up, and only since ``up_since``, so time the service was down is never absence."""

    __tablename__ = "service_beats"

    name: str = Field(primary_key=True, max_length=40)
    up_since: datetime = Field(sa_type=UTCDateTime)
    beat_at: datetime = Field(sa_type=UTCDateTime)
    owner: str | None = Field(default=None, max_length=200)


# Instrument the models now: the repository builds snapshots with ``model_construct`` on Core
# paths, and attribute access on those needs configured mappers even if no ORM query ran yet.
configure_mappers()

__all__ = [
    "AgentProfile",
    "Analysis",
    "AnalysisAnswer",
    "CodeLabel",
    "CachedResponse",
    "Event",
    "Experiment",
    "JudgeRubric",
    "JudgeRun",
    "JudgeScore",
    "Lease",
    "MessageTag",
    "OPEN_TURN_WHERE",
    "RateBucket",
    "Room",
    "RoomConfigVersion",
    "TurnDraft",
    "ServiceBeat",
    "Study",
    "StudyEvent",
    "StudyGroup",
    "StudyParticipant",
    "StudyToken",
    "metadata",
]
