"""Recorded events restored verbatim (imports of exported rooms): appended to a room's log, or
stored with a new room in one transaction, every record checked before anything is written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, insert
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Connection

from storage.checks import require_in
from storage.database import Database
from storage.errors import StorageValueError
from storage.rooms.config_versions import insert_config_versions
from storage.rooms.log import (
    check_error,
    check_event_fields,
    check_state,
    event_at,
    next_row,
    same_or_conflict,
)
from storage.rooms.room import new_room_values
from storage.rooms.rows import EVENTS, ROOMS, event_snapshot, insert_event, probe_room, touch_room
from storage.secret_guard import check_no_secrets
from storage.tables import Event
from vocabulary import EVENT_KINDS, TURN_KINDS, TurnState

IMPORT_FIELDS = frozenset(
    {
        "activity",
        "round",
        "state",
        "request_id",
        "visible_to",
        "data",
        "model",
        "input_tokens",
        "output_tokens",
        "cost",
        "latency",
        "error",
        "attempts",
        "saw",
        "parent_event_id",
        "created_at",
        "updated_at",
    }
)
"""Fields :func:`import_event` accepts besides kind, speaker and content (``created_at`` and
``updated_at``: the recorded times, a datetime or ISO 8601 text with a UTC offset; default now)."""


def import_event(
    db: Database, room_id: int, kind: str, speaker: str, content: str, **fields: Any
) -> Event:
    """Append one event with every recorded field restored verbatim (for imports and exports).

    Like :func:`append_message` (seq = last + 1, request-id idempotency, activity/round derived
    when missing), but a turn keeps its recorded ``state``, usage, ``error``, ``attempts`` and
    ``saw``. ``fields`` must be among :data:`IMPORT_FIELDS` (an unknown field is refused).
    Use :func:`import_events` to restore a whole log atomically.
    """
    return import_events(
        db, room_id, [{"kind": kind, "speaker": speaker, "content": content, **fields}]
    )[0]


def import_events(db: Database, room_id: int, records: Sequence[dict[str, Any]]) -> list[Event]:
    """Append many recorded events in one write transaction: all of them, or none.

    Each record has ``kind``, ``speaker``, ``content`` and any of :data:`IMPORT_FIELDS`. Every
    record is checked before anything is written (:class:`StorageValueError` names the record's
    index and field). Seqs continue the room's log in the order given.

    Checked here, as for every write: the record's shape (known fields, kind, a state that fits
    the kind), column types (counts >= 0, finite numbers, strict JSON, times with an offset), the
    secret guard on its labels and JSON fields, request-id idempotency, seqs. Trusted from the
    caller (the import's door, ``conversation.rooms.transfer``): who may speak (a turn's speaker
    on the roster, a person's name on a human message), content limits (length, NUL), and that
    ``parent_event_id`` names an event of this room.
    """
    prepared = [prepare_import(index, record) for index, record in enumerate(records)]
    now = db.now()
    with db.write_connection() as conn:
        return _insert_imported(conn, room_id, prepared, now)


def _insert_imported(
    conn: Connection, room_id: int, prepared: Sequence[dict[str, Any]], now: Any
) -> list[Event]:
    """Insert prepared import records at the end of the room's log (inside a write transaction)."""
    probe = probe_room(conn, room_id)
    imported: list[Event] = []
    for values in prepared:
        request_id = values["request_id"]
        seq = None
        if request_id is not None:
            seq = conn.execute(_SEQ_OF_REQUEST, {"room_id": room_id, "rid": request_id}).scalar()
        if seq is not None:
            existing = event_at(conn, room_id, seq)
            kind, speaker, content = values["kind"], values["speaker"], values["content"]
            imported.append(same_or_conflict(existing, kind, speaker, content))
            continue
        row = next_row(room_id, probe, values, now)
        imported.append(event_snapshot(id=insert_event(conn, row), **row))
        probe = probe._replace(
            last_seq=row["seq"], last_activity=row["activity"], last_round=row["round"]
        )
    if prepared:
        touch_room(conn, room_id, now)
    return imported


_SEQ_OF_REQUEST = sa_select(EVENTS.c.seq).where(
    EVENTS.c.room_id == bindparam("room_id"), EVENTS.c.request_id == bindparam("rid")
)


def prepare_import(index: int, record: Any) -> dict[str, Any]:
    """One record of :func:`import_events`, checked: the columns to write (``activity`` and
    ``round`` ``None`` when the log should decide them)."""
    where = f"event {index}"
    if not isinstance(record, dict):
        raise StorageValueError(f"{where} must be a dict, not {type(record).__name__}")
    unknown = set(record) - IMPORT_FIELDS - {"kind", "speaker", "content"}
    if unknown:
        raise StorageValueError(f"{where} has unknown field(s) {sorted(unknown)}")
    kind: Any = record.get("kind")
    require_in(kind, EVENT_KINDS, f"{where} kind")
    values = {name: record.get(name) for name in IMPORT_FIELDS}
    values.update(kind=kind, speaker=record.get("speaker"), content=record.get("content", ""))
    values["state"] = record.get("state", TurnState.DONE if kind in TURN_KINDS else None)
    values["attempts"] = values["attempts"] or 0
    check_event_fields(**{name: values[name] for name in _CHECKED_FIELDS})
    check_state(kind, values["state"], f"{where} state", required=True)
    _check_numbers(values, where)
    if values["error"] is not None:
        check_error(values["error"], f"{where} error")
    if values["model"] is not None and not isinstance(values["model"], str):
        raise StorageValueError(f"{where}: model must be a string label")
    # An imported record is untrusted configuration as much as data: its JSON fields and its
    # labels pass the secret guard like a config does (free text, the content, does not).
    labels = ("data", "error", "model", "request_id", "speaker")
    check_no_secrets({name: values[name] for name in labels}, field=where)
    for name in _TIMES:
        values[name] = _timestamp(values[name], f"{where} {name}")
    return values


def _check_numbers(values: dict[str, Any], where: str) -> None:
    """Counts are integers >= 0; measures finite numbers (``None``: not recorded)."""
    for name in ("input_tokens", "output_tokens", "attempts", "activity", "round"):
        value = values[name]
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            raise StorageValueError(f"{where}: {name}={value!r} must be an integer >= 0")
    for name in ("cost", "latency"):
        value = values[name]
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise StorageValueError(f"{where}: {name}={value!r} must be a finite number")


_TIMES = ("created_at", "updated_at")
_CHECKED_FIELDS = ("speaker", "content", "request_id", "visible_to", "data", "saw")


def _timestamp(value: Any, where: str) -> datetime | None:
    """A recorded time: a timezone-aware datetime or ISO 8601 text with an offset (UTC kept)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise StorageValueError(f"{where}={value!r} is not an ISO 8601 time") from None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise StorageValueError(f"{where}={value!r} must be a time with a UTC offset")
    return value.astimezone(UTC)


def create_room_with_log(
    db: Database,
    name: str,
    config: dict[str, Any],
    records: Sequence[dict[str, Any]],
    *,
    status: str = "idle",
    stop_reason: str | None = None,
    config_versions: Sequence[dict[str, Any]] = (),
) -> tuple[int, list[Event]]:
    """Store a new room and its whole recorded log in one write transaction: no other process
    (a worker above all) can ever see the room without its log. All or nothing: every record is
    validated first, and any failure leaves no room behind. Returns the room id and its events.
    ``config_versions``: the room's earlier configuration versions (an exported room's), restored
    in the same transaction.
    """
    prepared = [prepare_import(index, record) for index, record in enumerate(records)]
    values = new_room_values(db, name, config, status=status)
    values["stop_reason"] = stop_reason
    with db.write_connection() as conn:
        room_id = int(conn.execute(insert(ROOMS).returning(ROOMS.c.id), values).scalar_one())
        imported = _insert_imported(conn, room_id, prepared, values["created_at"])
        if config_versions:
            insert_config_versions(conn, room_id, config_versions, values["created_at"])
        return room_id, imported


__all__ = [
    "IMPORT_FIELDS",
    "create_room_with_log",
    "import_event",
    "import_events",
    "prepare_import",
]
