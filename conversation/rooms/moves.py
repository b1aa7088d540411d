"""A room's moves by a person or a study (pause, stop): the statuses each applies in, and the
notice each leaves in the log. ``Room.pause`` / ``Room.stop`` write them in their own
transaction; a study's transition writes them inside its own (``conversation.study.clock``)."""

from __future__ import annotations

from typing import Any

from conversation.vocabulary import (
    FINAL_ROOM_STATUSES,
    OPEN_ROOM_STATUSES,
    NoticeKind,
    RoomStatus,
)

#: The statuses a room may be paused from, and stopped from.
PAUSABLE = frozenset(
    OPEN_ROOM_STATUSES - {RoomStatus.PAUSED}
    | {RoomStatus.SETTLED, RoomStatus.FAILED, RoomStatus.TERMINATED}
)
STOPPABLE = frozenset(OPEN_ROOM_STATUSES | FINAL_ROOM_STATUSES - {RoomStatus.STOPPED})


def move_notice(past: NoticeKind, by: str) -> tuple[str, dict[str, Any]]:
    """The notice (text, data) of a room paused or resumed by ``by``."""
    return f"{past.capitalize()} by {by}.", {"event": past, "by": by}


def stop_notice(reason: str, by: str) -> tuple[str, dict[str, Any]]:
    """The notice (text, data) of a room stopped by ``by`` for ``reason``."""
    return f"Stopped: {reason}", {"event": NoticeKind.STOPPED, "reason": reason, "by": by}


__all__ = ["PAUSABLE", "STOPPABLE", "move_notice", "stop_notice"]
