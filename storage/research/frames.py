"""pandas DataFrames for the results pages (tables, charts, exports).

Every function runs a few indexed, paginated queries on the read engine (never blocked by
writers) and aggregates in SQL, so a database with a million stored events answers a page quickly:
rooms are paged first (``ix_rooms_status_updated``/``ix_rooms_experiment``/primary key), and events
are reached only through the ``(room_id, seq)`` index of the rooms on that page. Timestamps come
back as timezone-aware UTC pandas datetimes.

Counting rules (the same everywhere):
- *messages*: human messages plus agent messages in state ``done`` (drafts, failures, passes and
  system events are not messages); *words* are summed over messages only;
- *passes*: events of kind ``pass``; *failed_turns*: agent turns in state ``failed``;
  *near_copies*: turns flagged as nearly copying a recent message (``data.near_copy``);
- tokens, cost and latency are summed (latency averaged) over every agent/pass turn that has them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import pandas as pd
from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.sql import ColumnElement

from storage.checks import as_set, check_limit
from storage.database import Database
from storage.experiments.experiments import unpriced_call
from storage.research.codes import tag_labels
from storage.research.provenance import PROVENANCE_COLUMNS, provenance_row
from storage.rooms.listing import room_conditions, room_order
from storage.tables import Event, Room
from vocabulary import ROOM_STATUSES, EventKind, TurnState

ROOM_COLUMNS = [
    "room_id",
    "name",
    "status",
    "stop_reason",
    "experiment_id",
    "condition",
    "replicate",
    "parent_room_id",
    "created_at",
    "updated_at",
    "archived_at",
]
STAT_COLUMNS = [
    "events",
    "messages",
    "human_messages",
    "agent_messages",
    "passes",
    "failed_turns",
    "near_copies",
    "words",
    "input_tokens",
    "output_tokens",
    "cost",
    "unpriced_calls",
    "mean_latency",
    "last_seq",
]
EVENT_COLUMNS = [
    "room_id",
    "seq",
    "activity",
    "round",
    "kind",
    "speaker",
    "content",
    "state",
    "words",
    "model",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency",
    "attempts",
    "error_type",
    "error_message",
    "request_id",
    "created_at",
]
# The provenance columns every export shares (storage.research.provenance), then the message's tags.
EVENT_COLUMNS += [c for c in PROVENANCE_COLUMNS if c not in EVENT_COLUMNS] + ["tags"]
# What events_frame reads: never ``saw`` (a turn's list of every seq it saw: quadratic in a long
# room's length) nor the retry bookkeeping.
_EVENT_READ = (
    "id", "room_id", "seq", "activity", "round", "kind", "speaker", "content", "words", "state",
    "request_id", "visible_to", "data", "model", "input_tokens", "output_tokens", "cost",
    "latency", "error", "attempts", "created_at", "updated_at",
)  # fmt: skip
_PROVENANCE_ONLY = ("data", "visible_to", "updated_at")
SPEAKER_COLUMNS = [
    "speaker",
    "kind",
    "rooms",
    "messages",
    "passes",
    "failed_turns",
    "near_copies",
    "words",
    "mean_words",
    "input_tokens",
    "output_tokens",
    "cost",
    "mean_latency",
]

_NULLABLE_INTS = ("experiment_id", "replicate", "parent_room_id", "input_tokens", "output_tokens")
_T = Event.__table__  # type: ignore[attr-defined]


def _is_message() -> ColumnElement[bool]:
    return or_(
        _T.c.kind == EventKind.HUMAN,
        and_(_T.c.kind == EventKind.AGENT, _T.c.state == TurnState.DONE),
    )


def _count_if(condition: ColumnElement[bool]) -> Any:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def _sum(column: Any) -> Any:
    return func.coalesce(func.sum(column), 0)


def as_frame(rows: Sequence[Any], columns: list[str]) -> pd.DataFrame:
    return _frame_types(pd.DataFrame([tuple(row) for row in rows], columns=columns))


def _frame_types(frame: pd.DataFrame) -> pd.DataFrame:
    for name in ("created_at", "updated_at", "archived_at"):
        if name in frame:
            frame[name] = pd.to_datetime(frame[name], utc=True)
    for name in _NULLABLE_INTS:
        if name in frame:
            frame[name] = frame[name].astype("Int64")  # ids stay integers despite missing values
    return frame


def rooms_summary(
    db: Database,
    *,
    status: str | Collection[str] | None = None,
    experiment_id: int | None = None,
    room_ids: Sequence[int] | None = None,
    limit: int | None = 100,
    offset: int = 0,
    sort: str = "newest",
    **filters: Any,
) -> pd.DataFrame:
    """One row per room (one page, newest first by default): the room's fields and statistics.

    Columns: ``ROOM_COLUMNS + STAT_COLUMNS``. Filters: status (one or several), experiment, an
    explicit list of room ids, and every keyword of :func:`storage.rooms.listing.room_conditions`
    (``search``, ``created_after``, ``created_before``, ``archived``, ``in_experiment``);
    ``sort`` is a key of :data:`storage.rooms.listing.ROOM_SORTS`. Filtering, ordering and paging are
    SQL, and statistics are aggregated only for the page's rooms. The page count:
    :func:`storage.rooms.listing.count_rooms` with the same filters.
    """
    check_limit(limit, offset)
    rooms = Room.__table__  # type: ignore[attr-defined]
    query = (
        select(*[rooms.c[name] for name in ["id", *ROOM_COLUMNS[1:]]])
        .where(*room_conditions(status=status, experiment_id=experiment_id, **filters))
        .order_by(*room_order(sort))
    )
    if room_ids is not None:
        query = query.where(rooms.c.id.in_(list(room_ids)))
    query = query.offset(offset)
    if limit is not None:
        query = query.limit(limit)
    with db.read() as session:
        conn = session.connection()
        page = conn.execute(query).all()
        ids = [row[0] for row in page]
        stats = conn.execute(_stats_query(ids)).all() if ids else []
    frame = as_frame(page, ROOM_COLUMNS)
    stat_frame = pd.DataFrame([tuple(r) for r in stats], columns=["room_id", *STAT_COLUMNS])
    frame = frame.merge(stat_frame, on="room_id", how="left")
    counts = [c for c in STAT_COLUMNS if c not in ("cost", "mean_latency")]
    frame[counts] = frame[counts].fillna(0).astype("int64")
    frame["cost"] = frame["cost"].fillna(0.0).astype("float64")
    frame["mean_latency"] = frame["mean_latency"].astype("float64")
    return frame


def data_version(db: Database) -> tuple[Any, ...]:
    """A cheap fingerprint of what the results pages show: it changes whenever a room is
    created, deleted, archived or touched (every turn and message touches its room) or an event
    is added, so a page may cache its frames under it and never show stale numbers.

    Every part is an index probe, never a read of the rooms (their configs make a scan of
    100,000 rooms cost a few tenths of a second, on every run of a page): the count of rooms
    (the smallest index), the newest ``updated_at`` of each status (``ix_rooms_status_updated``),
    the count of archived rooms (``ix_rooms_archived``, revision 0014), the newest event id."""
    rooms = Room.__table__  # type: ignore[attr-defined]
    newest = [
        select(func.max(rooms.c.updated_at)).where(rooms.c.status == status).scalar_subquery()
        for status in sorted(ROOM_STATUSES)
    ]
    query = select(
        select(func.count()).select_from(rooms).scalar_subquery(),
        *newest,
        select(func.count())
        .select_from(rooms)
        .where(rooms.c.archived_at.is_not(None))
        .scalar_subquery(),
        select(func.max(_T.c.id)).scalar_subquery(),
    )
    with db.read() as session:
        row = session.connection().execute(query).one()
    return tuple(str(v) for v in row)


def last_messages(db: Database, room_ids: Sequence[int]) -> pd.DataFrame:
    """Each room's latest message (speaker and content) and its current activity, for a page of
    rooms in two indexed queries (never the whole log). Columns: room_id, activity, speaker,
    content (``None`` for a room with no message yet)."""
    ids = list(room_ids)
    columns = ["room_id", "activity", "speaker", "content"]
    if not ids:
        return pd.DataFrame(columns=columns)
    newest = (
        select(_T.c.room_id, func.max(_T.c.seq).label("seq"))
        .where(_T.c.room_id.in_(ids), _is_message())
        .group_by(_T.c.room_id)
        .subquery()
    )
    said = select(_T.c.room_id, _T.c.speaker, _T.c.content).join(
        newest, and_(_T.c.room_id == newest.c.room_id, _T.c.seq == newest.c.seq)
    )
    activity = (
        select(_T.c.room_id, func.max(_T.c.activity))
        .where(_T.c.room_id.in_(ids))
        .group_by(_T.c.room_id)
    )
    with db.read() as session:
        conn = session.connection()
        messages = {row[0]: (row[1], row[2]) for row in conn.execute(said)}
        activities = dict(tuple(row) for row in conn.execute(activity))
    rows = [(rid, int(activities.get(rid) or 0), *messages.get(rid, (None, None))) for rid in ids]
    return pd.DataFrame(rows, columns=columns)


def _stats_query(room_ids: list[int]) -> Any:
    message = _is_message()
    return (
        select(
            _T.c.room_id,
            func.count(),
            _count_if(message),
            _count_if(_T.c.kind == EventKind.HUMAN),
            _count_if(and_(_T.c.kind == EventKind.AGENT, _T.c.state == TurnState.DONE)),
            _count_if(_T.c.kind == EventKind.PASS),
            _count_if(_T.c.state == TurnState.FAILED),
            _count_if(_T.c.data["near_copy"].as_string().is_not(None)),
            _sum(case((message, _T.c.words), else_=0)),
            _sum(_T.c.input_tokens),
            _sum(_T.c.output_tokens),
            _sum(_T.c.cost),
            _count_if(unpriced_call(_T)),
            func.avg(_T.c.latency),
            func.max(_T.c.seq),
        )
        .where(_T.c.room_id.in_(room_ids))
        .group_by(_T.c.room_id)
    )


def events_frame(
    db: Database,
    room_ids: int | Sequence[int],
    *,
    after_seq: int | None = None,
    kinds: str | Collection[str] | None = None,
    limit: int | None = None,
    offset: int = 0,
    provenance: bool = True,
) -> pd.DataFrame:
    """The events of one or many rooms, ordered by (room_id, seq): the transcript table, and the
    room CSV and Results events CSV exports. ``provenance=False`` (charts, which need none of
    it) leaves the provenance and ``tags`` cells empty and skips their work (a few times faster
    on a long room); every export keeps the default.

    ``after_seq`` applies to every room (for one room: the live tail). Columns: ``EVENT_COLUMNS``
    (``error_type``/``error_message`` are unpacked from the error document; the provenance
    columns are :func:`storage.research.provenance.provenance_row`'s; ``tags`` lists the message's tag
    labels as a JSON array, see :mod:`storage.research.codes`).
    """
    check_limit(limit, offset)
    ids = [room_ids] if isinstance(room_ids, int) else list(room_ids)
    query = (
        select(*[_T.c[n] for n in _EVENT_READ if provenance or n not in _PROVENANCE_ONLY])
        .where(_T.c.room_id.in_(ids))
        .order_by(_T.c.room_id, _T.c.seq)
        .offset(offset)
    )
    if after_seq is not None:
        query = query.where(_T.c.seq > after_seq)
    wanted = as_set(kinds)
    if wanted is not None:
        query = query.where(_T.c.kind.in_(sorted(wanted)))
    if limit is not None:
        query = query.limit(limit)
    with db.read() as session:
        rows = session.connection().execute(query).all()
    if not provenance:
        return _lean_frame(rows)
    labels = tag_labels(db, ids) if rows else {}
    records = []
    for row in rows:
        record = provenance_row(row, times_as_text=False)
        error_type, error_message = error_fields(row.error)
        record.update(
            activity=row.activity,
            round=row.round,
            content=row.content,
            words=row.words,
            latency=row.latency,
            attempts=row.attempts,
            error_type=error_type,
            error_message=error_message,
            request_id=row.request_id,
            tags=labels.get(row.id),
        )
        records.append(tuple(record.get(name) for name in EVENT_COLUMNS))
    return as_frame(records, EVENT_COLUMNS)


#: What a lean frame fills (the rest of ``EVENT_COLUMNS`` is empty): column -> the row's field.
_LEAN = {
    name: name
    for name in ("room_id", "seq", "activity", "round", "kind", "speaker", "content", "state",
                 "words", "model", "input_tokens", "output_tokens", "cost", "latency",
                 "attempts", "request_id", "created_at")
} | {"event_id": "id"}  # fmt: skip


def _lean_frame(rows: Sequence[Any]) -> pd.DataFrame:
    """``events_frame(..., provenance=False)``, built a column at a time: the same frame as the
    row-by-row build without the provenance, several times faster (a page of 100 rooms of 100
    events each: 10,000 rows on every first render of Results)."""
    if not rows:
        return as_frame([], EVENT_COLUMNS)
    columns = dict(zip(rows[0]._fields, zip(*rows, strict=True), strict=True))
    errors = [error_fields(e) for e in columns["error"]]
    data: dict[str, Any] = {name: [None] * len(rows) for name in EVENT_COLUMNS}
    data.update({name: list(columns[field]) for name, field in _LEAN.items()})
    data["error_type"] = [e[0] for e in errors]
    data["error_message"] = [e[1] for e in errors]
    # The row-by-row build infers each column's type from its values: the same here.
    return _frame_types(pd.DataFrame(data, columns=EVENT_COLUMNS).infer_objects())


def error_fields(error: dict[str, Any] | None) -> tuple[Any, Any]:
    if not error:
        return (None, None)
    return (error.get("type"), error.get("message"))


def speaker_stats(
    db: Database,
    room_ids: int | Sequence[int] | None = None,
    *,
    experiment_id: int | None = None,
) -> pd.DataFrame:
    """Per-speaker statistics over some rooms (given ids, an experiment's rooms, or all rooms).

    One row per (speaker, kind) where kind is ``human`` or ``agent`` (an agent's passes and
    failures count on its ``agent`` row). Columns: ``SPEAKER_COLUMNS``. System events are left out.
    """
    rooms = Room.__table__  # type: ignore[attr-defined]
    role = case((_T.c.kind == EventKind.HUMAN, EventKind.HUMAN.value), else_=EventKind.AGENT.value)
    message = _is_message()
    query = (
        select(
            _T.c.speaker,
            role,
            func.count(func.distinct(_T.c.room_id)),
            _count_if(message),
            _count_if(_T.c.kind == EventKind.PASS),
            _count_if(_T.c.state == TurnState.FAILED),
            _count_if(_T.c.data["near_copy"].as_string().is_not(None)),
            _sum(case((message, _T.c.words), else_=0)),
            _sum(_T.c.input_tokens),
            _sum(_T.c.output_tokens),
            _sum(_T.c.cost),
            func.avg(_T.c.latency),
        )
        .where(_T.c.kind != EventKind.SYSTEM)
        .group_by(_T.c.speaker, role)
        .order_by(_T.c.speaker, role)
    )
    if room_ids is not None:
        ids = [room_ids] if isinstance(room_ids, int) else list(room_ids)
        query = query.where(_T.c.room_id.in_(ids))
    if experiment_id is not None:
        query = query.where(
            _T.c.room_id.in_(select(rooms.c.id).where(rooms.c.experiment_id == experiment_id))
        )
    with db.read() as session:
        rows = session.connection().execute(query).all()
    frame = pd.DataFrame(
        [tuple(r) for r in rows], columns=[c for c in SPEAKER_COLUMNS if c != "mean_words"]
    )
    frame.insert(
        SPEAKER_COLUMNS.index("mean_words"),
        "mean_words",
        (frame["words"] / frame["messages"].where(frame["messages"] > 0)).astype("float64"),
    )
    frame["cost"] = frame["cost"].astype("float64")
    frame["mean_latency"] = frame["mean_latency"].astype("float64")
    return frame


__all__ = [
    "as_frame",
    "error_fields",
    "EVENT_COLUMNS",
    "ROOM_COLUMNS",
    "SPEAKER_COLUMNS",
    "STAT_COLUMNS",
    "data_version",
    "events_frame",
    "last_messages",
    "rooms_summary",
    "speaker_stats",
]
