"""The beat that says this app process serves participants' pages: every app process runs one
(``conversation.worker.ServiceBeat``), whether or not it runs rooms, from the server's start, so
the studies' clock never counts the time no app served them as anyone's absence
(docs/studies.md, "The outage rule"). One per process and database URL, stopped with the
process (or by ``st.cache_resource.clear()``)."""

from __future__ import annotations

import atexit
from typing import Any

import streamlit as st


def _stop(beat: Any) -> None:
    beat.stop()


@st.cache_resource(show_spinner=False, on_release=_stop)
def service_beat(url: str, _db: Any) -> Any:
    """The beat of ``_db`` (the process's database for ``url``), started once."""
    from conversation.rooms.engine import owner_id
    from conversation.worker import ServiceBeat

    beat = ServiceBeat(_db, owner=owner_id("app")).start()
    atexit.register(_stop, beat)
    return beat


__all__ = ["service_beat"]
