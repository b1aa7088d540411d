"""The web app on PostgreSQL, in a real browser: `streamlit run app.py` with ``ROOMS_DATABASE_URL``
pointing at a database on the test server (``ROOMS_TEST_DATABASE``, see ``tests/conftest.py``).

A person starts a room from a template on Home, sees the agents' replies arrive, posts a message
and sees the agents answer it; the rows are checked in PostgreSQL itself. Skipped without a
server, except in CI (``CI`` set) where that is a failure.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import storage
from storage import Database
from tests.browser.browser_helpers import open_page, post, until, wait_count, wait_query, wait_text
from tests.browser.conftest import AppServer
from tests.support import databases

pytestmark = [pytest.mark.browser, pytest.mark.postgres]


@dataclass
class PostgresAppServer(AppServer):
    """An app server whose database is a PostgreSQL database instead of a SQLite file."""

    database_url: str = field(default="")

    @property
    def db_url(self) -> str:
        return self.database_url


@pytest.fixture(scope="module")
def pg_app(chromium_path: str) -> Iterator[PostgresAppServer]:
    server = databases.server()
    if server is None:
        reason = f"set {databases.TEST_DATABASE_ENV} to run the app on PostgreSQL"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set, so this test must run)", pytrace=False)
        pytest.skip(reason)
    url = server.create()  # blank: the app's own Database() builds the schema on start
    folder = Path(tempfile.mkdtemp(prefix="rooms-browser-pg-"))
    app = PostgresAppServer(folder, database_url=url)
    app.start()
    yield app
    app.stop()
    server.drop(url)
    shutil.rmtree(folder, ignore_errors=True)


def test_a_room_from_a_template_talks_and_answers_on_postgres(pg_app, browser) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page()
    db = Database(pg_app.db_url)
    try:
        open_page(page, pg_app, "/")
        # The sidebar names the database (shown literally: a word joiner keeps "://" from
        # becoming a link, so the test matches the text up to it).
        wait_text(page, "Database: postgresql+psycopg:")
        # The template's Start button (Streamlit marks a keyed widget with an st-key-<key> class).
        page.locator(".st-key-start-planner_coder_reviewer button").click()
        wait_query(page, "room=")
        wait_text(page, "Build a login form.")
        wait_count(page, "stChatMessage", 3)  # the opening and at least two agents' replies

        (room,) = storage.list_rooms(db)
        assert room.name.startswith("Planner") and room.id is not None
        room_id = room.id
        assert until(
            lambda: storage.get_room(db, room_id).status != "running"
        )  # first activity over
        before = len(storage.events(db, room_id))

        post(page, "Please add a password reset link.")
        wait_text(page, "Please add a password reset link.")
        shown = wait_count(page, "stChatMessage", before + 2)  # the message and a reply to it
        assert shown >= before + 2

        def answered() -> bool:
            rows = storage.events(db, room_id)
            asked = next(r.seq for r in rows if r.content == "Please add a password reset link.")
            return any(r.kind == "agent" and r.seq > asked and r.content for r in rows)

        assert until(answered)
    finally:
        db.dispose()
        page.close()
