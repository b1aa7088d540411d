"""The one set of words a room's status is told in, on every page (Home, Room, Experiments).

Storage keeps the statuses of ``vocabulary.RoomStatus`` (``terminated``, ``idle``, ...); a person
reads ``status_word``: the same word for the same state everywhere, and ``waiting for the model
server`` for a running room whose turn waits for its server (``storage.waiting_for_server``: a
fact in the database, so it is true after a restart and in every process). The Room page's
status line starts with the same word (capitalised) and adds what to do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from conversation.vocabulary import RoomStatus

#: What a person reads for each stored room status.
STATUS_WORDS: Mapping[str, str] = {
    RoomStatus.IDLE: "not started",
    RoomStatus.RUNNING: "running",
    RoomStatus.PAUSED: "paused",
    RoomStatus.WAITING: "waiting for a person",
    RoomStatus.STOPPED: "stopped",
    RoomStatus.SETTLED: "settled",
    RoomStatus.TERMINATED: "ended",
    RoomStatus.FAILED: "failed",
}
#: A running room whose turn waits for its model server.
WAITING_FOR_SERVER = "waiting for the model server"


def status_word(status: Any, *, waiting_for_server: bool = False) -> str:
    """The word for ``status`` (the stored value itself when unknown)."""
    text = str(status)
    if waiting_for_server and text == RoomStatus.RUNNING:
        return WAITING_FOR_SERVER
    return STATUS_WORDS.get(text, text)


def status_words(
    room_ids: Iterable[Any], statuses: Iterable[Any], waiting: Iterable[int] = ()
) -> list[str]:
    """``status_word`` of each room (``waiting``: the ids of the rooms waiting for their
    model server), in order."""
    waiting_ids = set(waiting)
    return [
        status_word(status, waiting_for_server=int(room_id) in waiting_ids)
        for room_id, status in zip(room_ids, statuses, strict=True)
    ]


__all__ = ["STATUS_WORDS", "WAITING_FOR_SERVER", "status_word", "status_words"]
