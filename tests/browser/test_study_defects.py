"""The study defects a new user met (issue 31), tried again in Chromium as a new user would: a
participant alone in the lobby is seated with an AI stand-in and told so; their help message is
shown in the monitor's thread and marked read; the researcher ends the conversation from the
monitor and the participant goes on to the post-survey and their code; and the participant's
browser asks no host but the study's own at any step (a person's address is personal data)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.app.study_support import definition_data
from tests.browser.browser_helpers import wait_text
from tests.browser.conftest import AppServer

pytestmark = pytest.mark.browser

TIMEOUT_MS = 60_000


@pytest.fixture
def server(
    chromium_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AppServer]:
    monkeypatch.setenv("ROOMS_PARTICIPANT_HEARTBEAT_SECONDS", "1")
    monkeypatch.setenv("ROOMS_MONITOR_POLL_SECONDS", "1")
    app = AppServer(tmp_path / "defects")
    app.folder.mkdir()
    app.start(timeout=60)
    yield app
    app.stop()


def launch(server: AppServer) -> str:
    from conversation import study

    data = definition_data(
        room={"time_limit_seconds": 3600, "words_per_minute": 0},
        participants={"heartbeat_seconds": 1, "dropout_seconds": 30},
        lobby={"timeout_seconds": 10, "on_timeout": "agents"},
    )
    db = server.database()
    try:
        return study.launch_study(db, study.load_definition(json.dumps(data), fmt="json")).code
    finally:
        db.dispose()


@pytest.mark.timeout(400)
def test_a_new_user_tries_the_study_and_its_monitor(browser: Any, server: AppServer) -> None:
    code = launch(server)
    person = browser.new_context(viewport={"width": 900, "height": 900})
    person.set_default_timeout(TIMEOUT_MS)
    asked: list[str] = []
    person.on("request", lambda request: asked.append(request.url))
    page = person.new_page()
    page.goto(f"{server.url}/participate?study={code}&PROLIFIC_PID=new-user-1")
    page.get_by_role("button", name="I agree").click()
    page.get_by_text("yes", exact=True).click()
    page.get_by_role("button", name="Continue").click()
    wait_text(page, "Waiting for 1 more person", timeout=TIMEOUT_MS)
    # Nobody else comes: the lobby times out, an AI plays the other seat, and the page says so.
    heading = page.get_by_role("heading", name="You are")
    heading.wait_for(timeout=TIMEOUT_MS)
    seat = heading.inner_text().removeprefix("You are ").strip()
    other = "Seller" if seat == "Buyer" else "Buyer"
    wait_text(page, f"No other participant could join in time: an AI agent plays {other}.")
    # A help message to the researcher.
    page.get_by_text("Help: message the researcher").click()
    page.get_by_label("Your message to the researcher").fill("Is the mediator a person?")
    page.get_by_role("button", name="Send to the researcher").click()

    researcher = browser.new_context(viewport={"width": 1400, "height": 1000})
    researcher.set_default_timeout(TIMEOUT_MS)
    monitor = researcher.new_page()
    monitor.goto(f"{server.url}/study_monitor?study={code}")
    monitor.get_by_text("A participant: help messages, message, remove").click()
    wait_text(monitor, "Participant: Is the mediator a person?", timeout=TIMEOUT_MS)
    picker = monitor.get_by_label("Participant", exact=True)
    assert "1 unread" in (picker.get_attribute("value") or "")  # as it was when drawn
    monitor.reload()  # shown once: read
    picker = monitor.get_by_label("Participant", exact=True)
    picker.wait_for(state="attached")
    assert "unread" not in (picker.get_attribute("value") or "")
    # End the conversation now: the participant goes on to the post-survey.
    monitor.get_by_text("End a conversation now").click()
    monitor.get_by_text("Yes, end this conversation now").click()
    monitor.get_by_role("button", name="End this conversation now").click()
    wait_text(page, "A few last questions", timeout=TIMEOUT_MS)
    page.get_by_role("radio", name="4").check()
    page.get_by_label("What did you think of the mediator?").fill("Fine.")
    page.get_by_role("button", name="Continue").click()
    wait_text(page, "the study is complete", timeout=TIMEOUT_MS)
    assert page.get_by_label("Your completion code").input_value() == "CMUG0001"
    researcher.close()
    person.close()
    elsewhere = sorted({url for url in asked if urlsplit(url).hostname != "127.0.0.1"})
    assert not elsewhere, elsewhere  # e.g. the page icon from fonts.gstatic.com
