"""The study's own log (``study_events``): joins, consents, assignments with their seeds,
absences and what was done about them, removals, the help channel, the researcher's switches.

Events that belong to a change of a participant or a group are written with it, in its
transaction (``participants.update_participant``, ``transitions``); this module appends the
others and reads the log."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection
from sqlmodel import col, select

from storage.checks import json_object
from storage.database import Database
from storage.studies._columns import NOTES
from storage.tables import StudyEvent


@dataclass(frozen=True, slots=True)
class StudyNote:
    """An entry of the study's log, written with a change it belongs to."""

    kind: str
    data: Mapping[str, Any] | None = None
    participant_id: int | None = None
    group_id: int | None = None


def write_note(conn: Connection, study_id: int, note: StudyNote, now: datetime) -> int:
    """``note`` appended inside the caller's write transaction; the event's id."""
    return note_on(
        conn,
        study_id,
        note.kind,
        now,
        participant_id=note.participant_id,
        group_id=note.group_id,
        data=note.data,
    )


def note_on(
    conn: Connection,
    study_id: int,
    kind: str,
    now: datetime,
    *,
    participant_id: int | None = None,
    group_id: int | None = None,
    data: Mapping[str, Any] | None = None,
) -> int:
    """Append to the study's log inside the caller's write transaction; the event's id."""
    row = {
        "study_id": study_id,
        "participant_id": participant_id,
        "group_id": group_id,
        "kind": kind,
        "data": json_object(dict(data), "data") if data else None,
        "at": now,
    }
    key = conn.execute(NOTES.insert().values(**row)).inserted_primary_key
    assert key is not None
    return int(key[0])


def record_study_event(
    db: Database,
    study_id: int,
    kind: str,
    *,
    participant_id: int | None = None,
    group_id: int | None = None,
    data: Mapping[str, Any] | None = None,
) -> int:
    """Append to the study's log; returns the event's id."""
    with db.write_connection() as conn:
        return note_on(
            conn,
            study_id,
            kind,
            db.now(),
            participant_id=participant_id,
            group_id=group_id,
            data=data,
        )


def study_events(
    db: Database,
    study_id: int,
    *,
    participant_id: int | None = None,
    kinds: Collection[str] | None = None,
) -> list[StudyEvent]:
    """The study's log (of one participant, of some kinds), oldest first."""
    query = select(StudyEvent).where(StudyEvent.study_id == study_id)
    if participant_id is not None:
        query = query.where(StudyEvent.participant_id == participant_id)
    if kinds is not None:
        query = query.where(col(StudyEvent.kind).in_(sorted(kinds)))
    with db.read() as session:
        return list(session.exec(query.order_by(col(StudyEvent.id))))


__all__ = ["StudyNote", "note_on", "record_study_event", "study_events", "write_note"]
