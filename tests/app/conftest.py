"""The app tests' database: a fresh SQLite file the app under test uses too (its URL in the
environment), with the in-process runner off (tests decide when agents speak) and Streamlit's
resource cache cleared around each test (which also stops any runner)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import streamlit as st

from storage import Database


@pytest.fixture
def db(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    monkeypatch.setenv("ROOMS_DATABASE_URL", db_url)
    monkeypatch.setenv("ROOMS_APP_RUNNER", "0")
    st.cache_resource.clear()
    database = Database(db_url)
    yield database
    st.cache_resource.clear()
    database.dispose()
