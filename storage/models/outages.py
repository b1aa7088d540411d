"""Which rooms wait for their model server: read from the turns themselves, so every page and
every process (after a restart too) sees the same truth.

The engine records a turn whose server refused or reset the connection as ``running`` with the
error code ``server_unavailable`` and the time of its next attempt (``turns.record_attempt``,
no try counted); the record is replaced by the turn's commit, or by its next error. So "waiting
for the model server" is a fact in the database, not the state of one process's memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlmodel import col, select

from storage.database import Database
from storage.rooms.rows import open_turn_clause
from storage.tables import Event
from vocabulary import TurnState

#: The error code the engine records on a turn waiting for its model server.
SERVER_UNAVAILABLE_CODE = "server_unavailable"


def waiting_for_server(db: Database, room_ids: Iterable[int]) -> dict[int, datetime | None]:
    """``{room_id: next attempt time}`` of the rooms among ``room_ids`` whose open turn is
    running and waiting for its model server (one query; rooms not waiting are absent)."""
    ids = sorted({int(i) for i in room_ids})
    if not ids:
        return {}
    with db.read() as session:
        rows = session.exec(
            select(Event.room_id, Event.error, Event.next_attempt_at).where(
                col(Event.room_id).in_(ids),
                open_turn_clause(),
                Event.state == TurnState.RUNNING,
                col(Event.error).is_not(None),
            )
        ).all()
    return {
        room_id: at
        for room_id, error, at in rows
        if isinstance(error, dict) and error.get("code") == SERVER_UNAVAILABLE_CODE
    }


__all__ = ["SERVER_UNAVAILABLE_CODE", "waiting_for_server"]
