"""A room as versioned JSON (``Room.export``): its config versions and its log, each event with
its ``provenance``, no secrets (keys are never stored); and export files written under a folder
by a safe name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import storage
from conversation.exceptions import ConversationValueError
from conversation.rooms.transfer.schema import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
)
from conversation.rooms.transfer.schema import (
    MAX_CONTENT_CHARS as MAX_CONTENT_CHARS,
)
from conversation.text.limits import MAX_IMPORT_BYTES as MAX_IMPORT_BYTES
from storage import iso, provenance_row

# -- export and re-import ---------------------------------------------------------------------------


SAFE_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")


def export_room(room: Any) -> dict[str, Any]:
    record = room.record
    events = []
    for e in room.events():
        events.append(
            {
                "seq": e.seq,
                "kind": e.kind,
                "speaker": e.speaker,
                "content": e.content,
                "round": e.round,
                "activity": e.activity,
                "state": e.state,
                "request_id": e.request_id,
                "visible_to": e.visible_to,
                "data": e.data,
                "model": e.model,
                "input_tokens": e.input_tokens,
                "output_tokens": e.output_tokens,
                "cost": e.cost,
                "latency": e.latency,
                "error": e.error,
                "attempts": e.attempts,
                "saw": e.saw,
                "created_at": iso(e.created_at),
                "updated_at": iso(e.updated_at),
                # Derived from the fields above (the columns every export shares); an import
                # recomputes it, so it can never disagree with the log.
                "provenance": provenance_row(e),
            }
        )
    exported = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "name": record.name,
        "status": record.status,
        "stop_reason": record.stop_reason,
        "config": record.config,
        "events": events,
    }
    versions = storage.room_config_versions(room.db, room.id)
    if versions:  # an edited room: every configuration version it ran with
        exported["config_versions"] = [
            {
                "version": v.version,
                "config": v.config,
                "by": v.by,
                "changes": list(v.changes or []),
                "from_seq": v.from_seq,
            }
            for v in versions
        ]
    return exported


def safe_export_path(folder: str | Path, filename: str) -> Path:
    """``folder / filename`` for an export file, refusing names that could leave ``folder``
    (separators, ``..``, absolute paths, hidden files) or are not plain file names."""
    if (
        not isinstance(filename, str)
        or len(filename) > 100
        or not SAFE_FILE.fullmatch(filename)
        or ".." in filename
    ):
        shown = repr(filename[:60]) if isinstance(filename, str) else type(filename).__name__
        raise ConversationValueError(
            f"export file name {shown} is not allowed: use at most 100 letters, digits, '_', '-' "
            "and '.', starting with a letter or digit (no folders)"
        )
    base = Path(folder).resolve()
    path = (base / filename).resolve()
    if path.parent != base:
        raise ConversationValueError(f"export file name {filename!r} leaves the export folder")
    return path


def write_export(room: Any, folder: str | Path, filename: str | None = None) -> Path:
    """Write ``room.export()`` as JSON into ``folder`` (created if needed); return the path."""
    path = safe_export_path(folder, filename or f"room-{room.id}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(room.export(), ensure_ascii=False, indent=1), encoding="utf-8")
    return path


__all__ = [
    "export_room",
    "safe_export_path",
    "write_export",
]
