"""The participant's page while the app is gone, in Chromium: ``kill -9`` of the server with a
person in a room. The page says the study's own words ("We lost contact with the server: keep
this page open, your place is kept"); a message sent meanwhile stays in the box with them; a
partner's message written meanwhile is there when the server is back on the same port; the page
reconnects by itself, the words go, and the person can post again; an outage longer than the
absence limit drops nobody (issue 31's outage rule, with presence from the open stream). No host
but the app's own."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from tests.browser.conftest import AppServer
from tests.browser.participant.conftest import (
    Person,
    launch,
)

pytestmark = pytest.mark.browser

OUTAGE = "We lost contact with the server: keep this page open, your place is kept."
TIMEOUT_MS = 60_000


@pytest.mark.timeout(300)
def test_the_page_says_the_studys_words_while_the_app_is_gone_and_comes_back(
    browser: Any, site_server: AppServer, site_db: Any
) -> None:
    from conversation import study

    # Away for 10 s is a dropout; the outage lasts longer, and counts against nobody.
    code = launch(site_db, participants={"cap": 2, "heartbeat_seconds": 1, "dropout_seconds": 10})
    ana = Person(browser, site_server, code, "pid-outage")
    try:
        ana.to_room()
        partner = study.join(site_db, code, {"PROLIFIC_PID": "pid-partner"}).token
        study.give_consent(site_db, partner)
        study.answer_survey(site_db, partner, {"bargained_before": "no"})
        ana.seat()
        ana.message_box().fill("Before the outage")
        ana.message_box().press("Enter")
        ana.wait_text("Before the outage")
        banner = ana.page.locator("#outage")
        assert not banner.is_visible()

        assert site_server.process is not None
        os.kill(site_server.process.pid, signal.SIGKILL)  # no cleanup, no goodbye
        site_server.process.wait()
        banner.wait_for(state="visible", timeout=TIMEOUT_MS)
        assert banner.inner_text() == OUTAGE
        ana.message_box().fill("Sent during the outage")
        ana.message_box().press("Enter")
        ana.wait_text("Not sent yet.")
        assert ana.message_box().input_value() == "Sent during the outage"
        study.post_as_participant(site_db, partner, "Written while you were away", request_id="w")
        time.sleep(15)  # longer than the absence limit
        assert banner.inner_text() == OUTAGE

        site_server.start(timeout=90)  # the same port, the same database
        banner.wait_for(state="hidden", timeout=TIMEOUT_MS)
        ana.wait_text("Written while you were away")
        ana.page.get_by_role("button", name="Send").click()  # the kept text, sent again
        ana.wait_text("Sent during the outage")
        said = [r["content"] for r in study.transcripts_table(site_db, code)]
        assert said.count("Sent during the outage") == 1 and "Before the outage" in said
        [mine] = [r for r in study.participants_table(site_db, code) if r["seat"] == ana.seat()]
        assert mine["stage"] == "room" and mine["exit_status"] is None
        ana.only_own_host()
    finally:
        ana.close()
