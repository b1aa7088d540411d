"""The bot and AI-use signals a participant's page recorded (``participant_signals``): one row
per message (its room and seq), per survey answered, per honeypot followed. Researchers read
them; participants never do; a withdrawal deletes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlmodel import col, select

from storage.checks import json_object
from storage.database import Database
from storage.tables import ParticipantSignal


def record_signals(
    db: Database,
    study_id: int,
    participant_id: int,
    kind: str,
    data: Mapping[str, Any],
    *,
    room_id: int | None = None,
    seq: int | None = None,
) -> int:
    """Store one record of signals; its id."""
    row = ParticipantSignal(
        study_id=study_id,
        participant_id=participant_id,
        kind=kind,
        room_id=room_id,
        seq=seq,
        data=json_object(dict(data), "signals"),
        at=db.now(),
    )
    with db.write() as session:
        session.add(row)
        session.flush()
        return int(row.id or 0)


def participant_signals(
    db: Database, study_id: int, *, participant_id: int | None = None
) -> list[ParticipantSignal]:
    """A study's signal records (of one participant), oldest first."""
    query = select(ParticipantSignal).where(ParticipantSignal.study_id == study_id)
    if participant_id is not None:
        query = query.where(ParticipantSignal.participant_id == participant_id)
    with db.read() as session:
        return list(session.exec(query.order_by(col(ParticipantSignal.id))))


__all__ = ["participant_signals", "record_signals"]
