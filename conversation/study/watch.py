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

from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any

import storage
from conversation.rooms.boundary import translated
from conversation.study.errors import NotAParticipant
from conversation.study.identity import token_hash


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


def on_local_commit(db: storage.Database, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback()`` after each write transaction of this process on ``db`` (on the
    writer's thread: quick and thread-safe); returns the function that stops it."""
    return storage.after_local_writes(db, callback)


class ChangeListener(storage.WorkListener):
    """Calls ``on_notice(None)`` when another process changed something a participant's page
    shows (PostgreSQL only; :meth:`start` returns False and does nothing on SQLite)."""

    def __init__(self, db: storage.Database, on_notice: Callable[[int | None], None]) -> None:
        super().__init__(db.url, on_notice, channel=storage.PAGES_CHANNEL)


__all__ = ["ChangeListener", "note_present", "on_local_commit", "view_markers"]
