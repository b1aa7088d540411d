"""Exports streamed in pieces: the events of any number of rooms as CSV or JSON lines, with
memory bounded by a few rooms' events, whatever the total (a 1,000,000-event experiment).

The rows and columns are those of the Results page's events CSV (``browse.events_frame``: one
row per event, ordered by room and seq, with the provenance columns); the rooms are read a few at
a time (``ROOMS_PER_PIECE``) and each piece is turned into text and handed on before the next is
read. ``write_events`` writes to any text file and reports progress.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, TextIO

#: Rooms read per piece: a piece holds their events only (a room has at most a few 10,000).
ROOMS_PER_PIECE = 20
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
    from conversation.browse.frames import events_frame

    if fmt not in FORMATS:
        raise ValueError(f"format={fmt!r} is not one of {', '.join(FORMATS)}")
    ids = list(room_ids)
    header = True
    for start in range(0, len(ids), ROOMS_PER_PIECE):
        chunk = ids[start : start + ROOMS_PER_PIECE]
        frame = events_frame(db, chunk)
        if len(frame):
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
        del frame
        if progress is not None:
            progress(min(start + ROOMS_PER_PIECE, len(ids)), len(ids))


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


__all__ = ["FORMATS", "ROOMS_PER_PIECE", "stream_events", "write_events"]
