"""What an app process serving many participants' pages asks for all of them at once (issue 32).

A process holds one event stream per open participant page. It does not read each person's page
once a second: it reads every watched page's marker in one statement (:func:`view_markers`) and
reads a person's view again (``participant_view``) only when their marker moved. Presence is
derived from the open streams: one write per process and interval says that every person whose
stream is open is here (:func:`note_present`), whatever their number, instead of a heartbeat
write per person. The study's clock judges absence from it (``last_seen_at``), as before.

What wakes the process: its own writes at once (:func:`on_local_commit`: a post, the runner's
turns, the study's clock), and on PostgreSQL every other process's (:class:`ChangeListener`,
``LISTEN`` on the channel a trigger notifies when a room's log, a draft, a participant, a group or
a study note changes). Without either (another process writing to SQLite) the caller polls the
markers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import storage
from conversation.rooms.boundary import translated
from conversation.study.errors import NotAParticipant
from conversation.study.participant.identity import seat_of, token_hash


def _hashes(tokens: Collection[str]) -> dict[str, str]:
    """``{hash: token}`` for the tokens that may be one (a malformed one names nobody)."""
    found: dict[str, str] = {}
    for token in tokens:
        try:
            found[token_hash(token)] = token
        except NotAParticipant:
            continue
    return found


def view_markers(db: storage.Database, tokens: Collection[str]) -> dict[str, tuple[Any, ...]]:
    """``{token: marker}`` for every token a participant holds (a token nobody holds is left
    out), in one read: a marker changes whenever that person's page can change but for the
    clock (a paced message appearing, the time left), so a view whose marker did not move is
    still their view."""
    hashes = _hashes(tokens)
    with translated():
        markers = storage.participant_markers(db, hashes)
    return {hashes[h]: marker for h, marker in markers.items()}


def note_present(
    db: storage.Database, tokens: Collection[str], *, now: datetime | None = None
) -> int:
    """The participants holding ``tokens`` are here (their pages' streams are open): one write
    for all of them. People who left are not touched. Returns how many were noted."""
    hashes = _hashes(tokens)
    with translated():
        return storage.mark_present(db, hashes, now or db.now())


@dataclass(frozen=True, slots=True)
class DraftRule:
    """Whose streaming replies a seat is shown as they are written: its room, and the agents'
    pace (``room.words_per_minute``: a paced agent's reply appears at a typing pace, never
    before)."""

    room_id: int
    pace: int | Mapping[str, int]

    def shows(self, speaker: str) -> bool:
        pace = self.pace.get(speaker, 0) if isinstance(self.pace, Mapping) else self.pace
        return not pace


@dataclass(frozen=True, slots=True)
class SeatDraft:
    """A streaming reply as a seat is shown it: where its message will be (``seq``), who writes
    it, the text so far and how many writes made it."""

    seq: int
    speaker: str
    text: str
    writes: int


def draft_rule(db: storage.Database, token: str) -> DraftRule | None:
    """The seat's :class:`DraftRule` when they sit in a room of a study that shows drafts
    (``room.show_drafts``), else None. ``NotAParticipant`` for a token nobody holds."""
    person, _, definition, seat = seat_of(db, token)
    rules = definition.model.room
    if not getattr(rules, "show_drafts", False) or seat.room_id is None or person.seat is None:
        return None
    return DraftRule(int(seat.room_id), rules.words_per_minute)


def seat_drafts(
    db: storage.Database,
    rules: Mapping[str, DraftRule],
    typing: Mapping[str, Sequence[str]],
) -> dict[str, SeatDraft]:
    """``{token: draft}``: for each seat with a rule, the streaming reply of its room that it may
    be shown now: its writer is among the agents ``typing`` for that seat (so the seat may see
    the turn) and unpaced. One read for every room."""
    rooms = sorted({rule.room_id for token, rule in rules.items() if typing.get(token)})
    if not rooms:
        return {}
    with translated():
        drafts = storage.room_drafts(db, rooms)
    shown: dict[str, SeatDraft] = {}
    for token, rule in rules.items():
        draft = drafts.get(rule.room_id)
        if (
            draft is not None
            and draft.speaker in typing.get(token, ())
            and rule.shows(draft.speaker)
        ):
            shown[token] = SeatDraft(draft.seq, draft.speaker, draft.text, draft.writes)
    return shown


def on_local_commit(db: storage.Database, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback()`` after each write transaction of this process on ``db`` (on the
    writer's thread: quick and thread-safe); returns the function that stops it."""
    return storage.after_local_writes(db, callback)


class ChangeListener(storage.WorkListener):
    """Calls ``on_notice(None)`` when another process changed something a participant's page
    shows (PostgreSQL only; :meth:`start` returns False and does nothing on SQLite)."""

    def __init__(self, db: storage.Database, on_notice: Callable[[int | None], None]) -> None:
        super().__init__(db.url, on_notice, channel=storage.PAGES_CHANNEL)


__all__ = [
    "ChangeListener",
    "DraftRule",
    "SeatDraft",
    "draft_rule",
    "note_present",
    "on_local_commit",
    "seat_drafts",
    "view_markers",
]
