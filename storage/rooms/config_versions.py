"""Room configuration versions: a room's settings changed after creation, every version kept.

``rooms.config`` is always the newest version (what every worker reads at each turn); the table
``room_config_versions`` keeps them all, version 1 being the configuration the room was created
with (written the first time the room is edited). A change is one write transaction: the new
version, the room's config, and a ``config_changed`` system event at the end of the log (which
also moves the log, so a turn planned from the old configuration is refused at its claim).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection

from storage.checks import check_json
from storage.database import Database
from storage.errors import StorageValueError
from storage.rooms.log import append_on, check_event_fields, message_values
from storage.rooms.rows import INSERT_EVENT, ROOMS, notice_row, probe_room, touch_room
from storage.secret_guard import check_no_secrets
from storage.tables import Event, RoomConfigVersion
from vocabulary import NoticeKind

VERSIONS = RoomConfigVersion.__table__  # type: ignore[attr-defined]


def change_room_config(
    db: Database,
    room_id: int,
    config: dict[str, Any],
    *,
    by: str | None,
    changes: Sequence[str],
    notice: str,
) -> tuple[int, int]:
    """Make ``config`` the room's configuration in one write transaction; return ``(version,
    seq)``: the new version number and the seq of its ``config_changed`` system event, whose data
    is ``{"event": "config_changed", "version", "by", "changes"}``. The config passes the same
    checks as a new room's (strict JSON, no secrets). Raises :class:`RoomNotFound`."""
    names = _checked_change(config, by, changes, notice)
    now = db.now()
    with db.write_connection() as conn:
        return _change_on(conn, room_id, config, by, names, notice, now)


def _checked_change(
    config: dict[str, Any], by: str | None, changes: Sequence[str], notice: str
) -> list[str]:
    """The names of the changed fields, once the config and the notice pass their checks."""
    check_room_config(config)
    names = list(changes)
    if not all(isinstance(n, str) for n in names):
        raise StorageValueError(f"changes={changes!r} must be a list of field names")
    data = {"event": NoticeKind.CONFIG_CHANGED, "by": by, "changes": names}
    check_event_fields(speaker="room", content=notice, data={**data, "version": 0})
    return names


def _change_on(
    conn: Connection,
    room_id: int,
    config: dict[str, Any],
    by: str | None,
    names: list[str],
    notice: str,
    now: Any,
) -> tuple[int, int]:
    """:func:`change_room_config`'s write, inside the caller's write transaction."""
    data = {"event": NoticeKind.CONFIG_CHANGED, "by": by, "changes": names}
    probe = probe_room(conn, room_id)
    latest = conn.execute(
        select(func.max(VERSIONS.c.version)).where(VERSIONS.c.room_id == room_id)
    ).scalar()
    if latest is None:  # the first change: keep the configuration the room was created with
        current = conn.execute(select(ROOMS.c.config).where(ROOMS.c.id == room_id)).scalar()
        _insert_version(conn, room_id, 1, current or {}, None, [], 0, now)
        latest = 1
    version, seq = int(latest) + 1, probe.last_seq + 1
    _insert_version(conn, room_id, version, config, by, names, seq, now)
    conn.execute(update(ROOMS).where(ROOMS.c.id == room_id).values(config=config, updated_at=now))
    conn.execute(
        INSERT_EVENT, notice_row(room_id, probe, notice, {**data, "version": version}, now)
    )
    touch_room(conn, room_id, now)
    return version, seq


def post_after_config_change(
    db: Database,
    room_id: int,
    config: dict[str, Any],
    *,
    by: str | None,
    changes: Sequence[str],
    notice: str,
    message: dict[str, Any],
    reopen: Sequence[str] = (),
) -> tuple[int, Event]:
    """A settings change and a person's message after it, in one write transaction (continuing
    a room past its turn limit with a message): nobody sees the raised limit without the message
    or the message without it. ``message``: :func:`~storage.rooms.log.append_message`'s fields
    (``kind``, ``speaker``, ``content``, optionally ``request_id``, ``visible_to``, ``data``).
    A request id already used returns that message and changes nothing (a double click does not
    raise the limit twice). Returns ``(version in force, message)``."""
    names = _checked_change(config, by, changes, notice)
    values = message_values(**message)
    now = db.now()
    with db.write_connection() as conn:
        probe = probe_room(conn, room_id, values["request_id"])
        if probe.request_seq is None:
            _change_on(conn, room_id, config, by, names, notice, now)
        event = append_on(conn, room_id, values, reopen, now)
        latest = conn.execute(
            select(func.max(VERSIONS.c.version)).where(VERSIONS.c.room_id == room_id)
        ).scalar()
    return int(latest or 1), event


def room_config_versions(db: Database, room_id: int) -> list[RoomConfigVersion]:
    """The room's stored versions, oldest first (empty for a room never edited)."""
    query = select(VERSIONS).where(VERSIONS.c.room_id == room_id).order_by(VERSIONS.c.version)
    with db.read_connection() as conn:
        return [RoomConfigVersion.model_construct(**row._mapping) for row in conn.execute(query)]


def insert_config_versions(
    conn: Connection, room_id: int, versions: Sequence[dict[str, Any]], now: Any
) -> None:
    """Restore exported versions (``{version, config, by, changes, from_seq}``) of a new room,
    inside the caller's write transaction (an import)."""
    for item in versions:
        if not isinstance(item, dict) or not isinstance(item.get("version"), int):
            raise StorageValueError(f"a config version must be a dict with a version, got {item!r}")
        check_room_config(item.get("config"))
        _insert_version(
            conn,
            room_id,
            item["version"],
            item["config"],
            item.get("by"),
            list(item.get("changes") or []),
            int(item.get("from_seq") or 0),
            now,
        )


def check_room_config(config: Any) -> dict[str, Any]:
    """A room config as storage accepts it: a strict-JSON dict that passes the secret guard."""
    if not isinstance(config, dict):
        raise StorageValueError(
            f"config must be a dict (a JSON object), not {type(config).__name__}"
        )
    check_json(config, "config")
    check_no_secrets(config, field="config")
    return config


def _insert_version(
    conn: Connection,
    room_id: int,
    version: int,
    config: dict[str, Any],
    by: str | None,
    changes: list[str],
    from_seq: int,
    now: Any,
) -> None:
    conn.execute(
        insert(VERSIONS),
        {
            "room_id": room_id,
            "version": version,
            "config": config,
            "by": by,
            "changes": changes,
            "from_seq": from_seq,
            "created_at": now,
        },
    )


__all__ = [
    "change_room_config",
    "check_room_config",
    "insert_config_versions",
    "post_after_config_change",
    "room_config_versions",
]
