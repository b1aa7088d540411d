"""Exports streamed in pieces: the events of any number of rooms as CSV or JSON lines, with
memory bounded by a few rooms' events, whatever the total (a 1,000,000-event experiment).

The rows and columns are those of the Results page's events CSV (``browse.events_frame``: one
row per event, ordered by room and seq, with the provenance columns); the rooms are read a few at
a time (``ROOMS_PER_PIECE``), their events at most ``EVENTS_PER_PIECE`` at a time (a 10,000-event
room is read in windows), and each piece is turned into text and handed on before the next is
read: the memory is bounded by one piece, whatever the rooms' lengths. ``write_events`` writes to any text file and reports progress.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, TextIO

#: Rooms read together (then windows of their events, ordered by room and seq).
ROOMS_PER_PIECE = 20
#: Events per piece at most: a piece's frame and text are a few MB.
EVENTS_PER_PIECE = 2_000
FORMATS = ("csv", "jsonl")


def stream_events(
    db: Any,
    room_ids: Sequence[int],
    fmt: Literal["csv", "jsonl"] = "csv",
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[str]:
    """The events of ``room_ids`` as text pieces (CSV: one header, then rows; JSON lines: one
    object per event). ``progress(rooms done, rooms)`` after each piece."""
    if fmt not in FORMATS:
        raise ValueError(f"format={fmt!r} is not one of {', '.join(FORMATS)}")
    ids = list(room_ids)
    header = True
    for start in range(0, len(ids), ROOMS_PER_PIECE):
        for frame in _windows(db, ids[start : start + ROOMS_PER_PIECE]):
            if fmt == "csv":
                yield frame.to_csv(index=False, header=header)
                header = False
            else:
                yield (
                    frame.to_json(
                        orient="records", lines=True, force_ascii=False, date_format="iso"
                    ).rstrip("\n")
                    + "\n"
                )
        if progress is not None:
            progress(min(start + ROOMS_PER_PIECE, len(ids)), len(ids))


def _windows(db: Any, room_ids: list[int]) -> Iterator[Any]:
    """The events of ``room_ids`` as frames of at most ``EVENTS_PER_PIECE`` rows, in order
    (an offset within these few rooms: an index walk of at most their events)."""
    from conversation.browse.frames import events_frame

    offset = 0
    while True:
        frame = events_frame(db, room_ids, limit=EVENTS_PER_PIECE, offset=offset)
        if len(frame):
            yield frame
        if len(frame) < EVENTS_PER_PIECE:
            return
        offset += EVENTS_PER_PIECE


def write_events(
    db: Any,
    room_ids: Sequence[int],
    out: TextIO,
    fmt: Literal["csv", "jsonl"] = "csv",
    *,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Write :func:`stream_events` to ``out``; returns the characters written."""
    written = 0
    for piece in stream_events(db, room_ids, fmt, progress=progress):
        written += out.write(piece)
    return written


__all__ = ["EVENTS_PER_PIECE", "FORMATS", "ROOMS_PER_PIECE", "stream_events", "write_events"]
