"""What the pages read, as pandas tables: rooms with their statistics, transcripts, analysis
answers, message tags (``storage.research.frames``, its counting rules and columns).

pandas is imported on the first call, not with this module: only pages call these, and a worker
process never loads pandas (``tests/test_layers.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def rooms_summary(db: Any, **filters: Any) -> pd.DataFrame:
    """One row per room of a page, with its statistics (``storage.research.frames.rooms_summary``)."""
    from storage.research import frames

    return frames.rooms_summary(db, **filters)


def events_frame(db: Any, room_ids: int | Sequence[int], **options: Any) -> pd.DataFrame:
    """The events of one or many rooms, by (room, seq) (``storage.research.frames.events_frame``)."""
    from storage.research import frames

    return frames.events_frame(db, room_ids, **options)


def last_messages(db: Any, room_ids: Sequence[int]) -> pd.DataFrame:
    """Each room's latest message and current activity (``storage.research.frames.last_messages``)."""
    from storage.research import frames

    return frames.last_messages(db, room_ids)


def analysis_frame(db: Any, analysis_id: int) -> pd.DataFrame:
    """An analysis's answers with each room's design fields (``storage.research.analysis_frames.analysis_frame``)."""
    from storage.research import analysis_frames

    return analysis_frames.analysis_frame(db, analysis_id)


def tags_frame(db: Any, room_ids: Sequence[int] | None = None) -> pd.DataFrame:
    """Every message tag of some rooms with its message (``storage.research.analysis_frames.tags_frame``)."""
    from storage.research import analysis_frames

    return analysis_frames.tags_frame(db, room_ids)


def data_version(db: Any) -> tuple[Any, ...]:
    """A fingerprint that changes whenever what these tables show changes (cache key)."""
    from storage.research import frames

    return frames.data_version(db)


__all__ = [
    "analysis_frame",
    "data_version",
    "events_frame",
    "last_messages",
    "rooms_summary",
    "tags_frame",
]
