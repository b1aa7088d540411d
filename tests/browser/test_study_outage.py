"""A participant's page while the app is gone (issue 31), in Chromium: ``kill -9`` of the server
with a person in a room. The page says the study's own words ("We lost contact with the server:
keep this page open, your place is kept"), never Streamlit's "Connection error ... Are you
connected to the internet?"; the server comes back on the same port, the page reconnects by
itself, the words go, and the person is still in their seat and can post. The page asks no host
but the study's own throughout."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.app.study_support import definition_data
from tests.browser.browser_helpers import wait_text
from tests.browser.conftest import AppServer

pytestmark = pytest.mark.browser

OUTAGE = "We lost contact with the server: keep this page open, your place is kept."
STREAMLIT_WORDS = ("Are you connected to the internet", "Connection error", "Is Streamlit still")
TIMEOUT_MS = 60_000


@pytest.fixture
def server(
    chromium_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AppServer]:
    monkeypatch.setenv("ROOMS_PARTICIPANT_POLL_SECONDS", "0.5")
    monkeypatch.setenv("ROOMS_PARTICIPANT_HEARTBEAT_SECONDS", "1")
    app = AppServer(tmp_path / "outage")
    app.folder.mkdir()
    app.start(timeout=60)
    yield app
    app.stop()


def launch(server: AppServer) -> str:
    from conversation import study

    data = definition_data(
        room={"time_limit_seconds": 3600, "words_per_minute": 0},
        participants={"heartbeat_seconds": 1, "dropout_seconds": 20, "on_dropout": "agent"},
        lobby={"timeout_seconds": 10, "on_timeout": "agents"},
    )
    data["pre_survey"] = []
    db = server.database()
    try:
        return study.launch_study(db, study.load_definition(json.dumps(data), fmt="json")).code
    finally:
        db.dispose()


def hosts_asked(context: Any) -> list[str]:
    """Every URL the context's pages ask for (recorded as they ask)."""
    asked: list[str] = []
    context.on("request", lambda request: asked.append(request.url))
    return asked


@pytest.mark.timeout(400)
def test_the_study_says_its_own_words_while_the_app_is_gone_and_the_page_comes_back(
    browser: Any, server: AppServer
) -> None:
    from conversation import study

    code = launch(server)
    context = browser.new_context(viewport={"width": 900, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    asked = hosts_asked(context)
    page = context.new_page()
    page.goto(f"{server.url}/participate?study={code}&PROLIFIC_PID=outage-1")
    page.get_by_role("button", name="I agree").click()
    wait_text(page, "in this conversation", timeout=TIMEOUT_MS)  # the lobby filled with agents
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill("Before the outage")
    box.press("Enter")
    wait_text(page, "Before the outage", timeout=TIMEOUT_MS)
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGKILL)  # kill -9: no cleanup, no goodbye
    server.process.wait()
    page.locator("#study-outage").wait_for(state="visible", timeout=TIMEOUT_MS)
    assert page.locator("#study-outage").inner_text() == OUTAGE
    time.sleep(12)  # long enough for Streamlit's own dialog to have shown itself (6 retries)
    shown = page.inner_text("body")
    assert OUTAGE in shown
    assert not any(words in shown for words in STREAMLIT_WORDS), shown
    assert not page.get_by_test_id("stDialog").is_visible()
    server.start(timeout=90)  # the same port, the same database
    page.locator("#study-outage").wait_for(state="detached", timeout=TIMEOUT_MS)
    wait_text(page, "Before the outage", timeout=TIMEOUT_MS)
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill("After the outage")
    box.press("Enter")
    try:
        wait_text(page, "After the outage", timeout=TIMEOUT_MS)
    except Exception as exc:
        raise AssertionError(f"not shown; the page shows:\n{page.inner_text('body')}") from exc
    db = server.database()
    try:
        [row] = study.participants_table(db, code)
        assert row["stage"] == "room" and row["exit_status"] is None  # nobody was dropped
        said = [r["content"] for r in study.transcripts_table(db, code)]
        assert "Before the outage" in said and "After the outage" in said
    finally:
        db.dispose()
        context.close()
    elsewhere = sorted({url for url in asked if urlsplit(url).hostname != "127.0.0.1"})
    assert not elsewhere, elsewhere
