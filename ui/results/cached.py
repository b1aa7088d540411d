"""The results frames, cached per database and data version (``storage.research.frames.data_version``):
a rerun caused by a widget (a filter, a tab's control, a chart click) reuses the frames instead of
querying and aggregating again, and any write to the database (a turn, a message, a new, renamed,
archived or deleted room) changes the version, so nothing stale is ever shown. The version itself
is one cheap query, asked on every call (never cached: a write must show at once)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from conversation import browse


@st.cache_data(show_spinner=False, max_entries=32)
def _rooms_summary(url: str, version: tuple[Any, ...], _db: Any, **kwargs: Any) -> pd.DataFrame:
    return browse.rooms_summary(_db, **kwargs)


@st.cache_data(show_spinner=False, max_entries=16)
def _events_frame(
    url: str, version: tuple[Any, ...], _db: Any, room_ids: tuple[int, ...], **kwargs: Any
) -> pd.DataFrame:
    return browse.events_frame(_db, list(room_ids), **kwargs)


def rooms_summary(db: Any, **kwargs: Any) -> pd.DataFrame:
    """:func:`storage.research.frames.rooms_summary`, cached under the data version."""
    return _rooms_summary(db.url, browse.data_version(db), db, **kwargs)


def events_frame(db: Any, room_ids: Any, **kwargs: Any) -> pd.DataFrame:
    """:func:`storage.research.frames.events_frame`, cached under the data version."""
    ids = (int(room_ids),) if isinstance(room_ids, int) else tuple(int(r) for r in room_ids)
    return _events_frame(db.url, browse.data_version(db), db, ids, **kwargs)


__all__ = ["events_frame", "rooms_summary"]
