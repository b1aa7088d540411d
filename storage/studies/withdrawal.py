"""A participant's withdrawal, written once: their personal columns cleared (recruitment id,
labels, survey answers), their signals and help messages deleted, their messages in their
room redacted (content replaced by a marker) or removed, the room's log counted as edited (a
worker's view of it is read again), and an audit note without content, in one transaction.

Then :func:`redact_texts` removes the texts they wrote from what was derived from them: model
cache entries whose prompts hold one (deleted: the next call asks again) and the follow-up
answers and judges' comments of their room (the text replaced by the marker).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select, update
from sqlmodel import col

from storage.database import Database
from storage.errors import ParticipantNotFound
from storage.rooms.rows import EVENTS, note_edit
from storage.studies._columns import NOTES, PEOPLE
from storage.studies.study_log import StudyNote, write_note
from storage.tables import AnalysisAnswer, CachedResponse, MessageTag, ParticipantSignal

SIGNALS: Any = ParticipantSignal.__table__  # type: ignore[attr-defined]
TAGS: Any = MessageTag.__table__  # type: ignore[attr-defined]
CACHE: Any = CachedResponse.__table__  # type: ignore[attr-defined]
ANSWERS: Any = AnalysisAnswer.__table__  # type: ignore[attr-defined]

#: The participant's columns a withdrawal clears: everything that is theirs but not the study's
#: design (their pseudonym, condition, seat and timings stay, for the attrition counts).
CLEARED = {
    "recruitment_id": None,
    "recruitment": None,
    "labels": None,
    "pre_survey": None,
    "post_survey": None,
    "posts": None,
}


@dataclass(frozen=True, slots=True)
class Withdrawal:
    """What to write for one participant's withdrawal (decided above storage): the events of
    their room to redact (content becomes ``marker``, data keeps only who posted) or remove,
    extra participant columns (their exit, when they were still on their path), the kinds of
    their log entries that hold what they wrote (help messages), and the audit note."""

    participant_id: int
    room_id: int | None
    redact: Sequence[int]
    remove: Sequence[int]
    marker: str
    fields: Mapping[str, Any]
    content_kinds: Sequence[str]
    note: StudyNote


@dataclass(frozen=True, slots=True)
class WithdrawalCounts:
    """How much a withdrawal changed (the audit note's numbers)."""

    redacted: int = 0
    removed: int = 0
    signals: int = 0
    notes: int = 0
    derived: dict[str, int] = field(default_factory=dict)


def withdraw_participant(db: Database, study_id: int, w: Withdrawal) -> WithdrawalCounts:
    """Write ``w`` in one transaction (see the module doc)."""
    now = db.now()
    mine = PEOPLE.c.id == w.participant_id
    with db.write_connection() as conn:
        found = conn.execute(select(PEOPLE.c.study_id).where(mine)).first()
        if found is None or int(found[0]) != study_id:
            raise ParticipantNotFound(f"participant {w.participant_id} is not in study {study_id}")
        conn.execute(
            PEOPLE.update()
            .where(mine)
            .values(**CLEARED, **dict(w.fields), withdrawn_at=now, updated_at=now)
        )
        signals = conn.execute(
            delete(SIGNALS).where(SIGNALS.c.participant_id == w.participant_id)
        ).rowcount
        notes = conn.execute(
            delete(NOTES).where(
                NOTES.c.participant_id == w.participant_id,
                col(NOTES.c.kind).in_(list(w.content_kinds)),
            )
        ).rowcount
        touched = [*w.redact, *w.remove]
        if touched:
            conn.execute(delete(TAGS).where(col(TAGS.c.event_id).in_(touched)))
        if w.redact:
            conn.execute(
                update(EVENTS)
                .where(col(EVENTS.c.id).in_(list(w.redact)))
                .values(content=w.marker, updated_at=now)
            )
        if w.remove:
            conn.execute(delete(EVENTS).where(col(EVENTS.c.id).in_(list(w.remove))))
        if touched and w.room_id is not None:
            note_edit(conn, w.room_id, now)
        write_note(conn, study_id, w.note, now)
    return WithdrawalCounts(
        redacted=len(w.redact), removed=len(w.remove), signals=signals or 0, notes=notes or 0
    )


def redact_texts(
    db: Database, texts: Iterable[str], *, room_id: int | None, marker: str
) -> dict[str, int]:
    """Remove ``texts`` from what was derived from them: model cache entries holding one in a
    prompt are deleted (the cache is read in pages, then one write deletes the keys found), and
    the analysis answers of ``room_id`` have each occurrence replaced by ``marker``. Returns
    ``{"cache_entries": n, "answers": n}``."""
    wanted = sorted({t for t in texts if isinstance(t, str) and t.strip()}, key=len, reverse=True)
    if not wanted:
        return {"cache_entries": 0, "answers": 0}
    keys = list(_cache_keys_holding(db, wanted))
    with db.write_connection() as conn:
        cache = (
            conn.execute(delete(CACHE).where(col(CACHE.c.key).in_(keys))).rowcount if keys else 0
        )
        answers = 0
        if room_id is not None:
            rows = conn.execute(
                select(ANSWERS.c.id, ANSWERS.c.answer, ANSWERS.c.comment, ANSWERS.c.error).where(
                    ANSWERS.c.room_id == room_id
                )
            ).all()
            for row_id, answer, comment, error in rows:
                new = {
                    "answer": _redacted(answer, wanted, marker),
                    "comment": _redacted(comment, wanted, marker),
                    "error": _redacted(error, wanted, marker),
                }
                if new != {"answer": answer, "comment": comment, "error": error}:
                    conn.execute(ANSWERS.update().where(ANSWERS.c.id == row_id).values(**new))
                    answers += 1
    return {"cache_entries": int(cache or 0), "answers": answers}


def _cache_keys_holding(db: Database, texts: Sequence[str], page: int = 500) -> Iterable[str]:
    """The model cache's keys whose prompts hold one of ``texts`` (read a page at a time)."""
    after = ""
    while True:
        with db.read_connection() as conn:
            rows = conn.execute(
                select(CACHE.c.key, CACHE.c.entry)
                .where(CACHE.c.key > after)
                .order_by(CACHE.c.key)
                .limit(page)
            ).all()
        for key, entry in rows:
            prompts = " ".join(
                str((entry or {}).get(name) or "") for name in ("user_prompt", "system_prompt")
            )
            if any(text in prompts for text in texts):
                yield key
        if len(rows) < page:
            return
        after = rows[-1][0]


def _redacted(value: Any, texts: Sequence[str], marker: str) -> Any:
    """``value`` (JSON) with every occurrence of ``texts`` in its strings replaced."""
    if isinstance(value, str):
        for text in texts:
            value = value.replace(text, marker)
        return value
    if isinstance(value, list):
        return [_redacted(v, texts, marker) for v in value]
    if isinstance(value, dict):
        return {k: _redacted(v, texts, marker) for k, v in value.items()}
    return value


__all__ = ["CLEARED", "Withdrawal", "WithdrawalCounts", "redact_texts", "withdraw_participant"]
