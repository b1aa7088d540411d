"""An agent's reply while it streams, on the participant's page in Chromium: by default the
person sees "Mediator is typing…" (a live status) and none of the partial text, then the message;
with ``room.show_drafts`` the reply grows in the chat as it is written, marked ``aria-busy`` so a
screen reader announces it once, when it is complete, in the same place.

The offline model streams at 3 words a second in the server process
(``ROOMS_OFFLINE_WORDS_PER_SECOND``), so a reply lasts seconds and the runner writes partial
drafts that the page is pushed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import AppServer
from tests.browser.participant.conftest import Person, launch

pytestmark = pytest.mark.browser

TYPING = "Mediator is typing"
MEDIATOR = """() => [...document.querySelectorAll('#messages li')]
    .filter(li => (li.querySelector('.who')?.textContent || '') === 'Mediator')
    .map(li => ({text: li.querySelector('.body')?.textContent || '',
                 busy: li.getAttribute('aria-busy'), seq: li.dataset.seq}))"""


@pytest.fixture
def site_server(
    chromium_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AppServer]:
    monkeypatch.setenv("ROOMS_OFFLINE_WORDS_PER_SECOND", "3")
    monkeypatch.setenv("ROOMS_RUNNER_POLL_SECONDS", "0.2")
    server = AppServer(tmp_path / "drafts")
    server.folder.mkdir()
    server.start(timeout=90)
    yield server
    server.stop()


def seated(browser: Any, server: AppServer, db: Any, code: str) -> Person:
    from conversation import study

    ana = Person(browser, server, code, "pid-drafts")
    ana.page.get_by_role("button", name="I agree").click()
    ana.page.get_by_text("yes", exact=True).click()
    ana.page.get_by_role("button", name="Continue").click()
    ana.wait_text("Waiting for 1 more person")
    partner = study.join(db, code, {"PROLIFIC_PID": "pid-partner"}).token
    study.give_consent(db, partner)
    study.answer_survey(db, partner, {"bargained_before": "no"})
    return ana


def test_by_default_the_person_sees_typing_and_none_of_the_partial_text(
    browser: Any, site_server: AppServer, site_db: Any
) -> None:
    from conversation import browse, study

    code = launch(site_db, participants={"cap": 2})
    ana = seated(browser, site_server, site_db, code)
    try:
        ana.wait_text(TYPING)  # the Mediator opens the room as soon as it is formed
        assert ana.page.locator("#typing").get_attribute("role") == "status"
        token = study.join(site_db, code, {"PROLIFIC_PID": "pid-partner"}).token
        room_id = study.participant_view(site_db, token).room_id
        deadline_draft = None
        for _ in range(200):
            deadline_draft = browse.room_draft(site_db, room_id)
            if deadline_draft is not None and len(deadline_draft.text.split()) >= 4:
                break
            ana.page.wait_for_timeout(100)
        assert deadline_draft is not None and deadline_draft.speaker == "Mediator"
        assert deadline_draft.text not in ana.page.inner_text("body")
        assert ana.page.evaluate(MEDIATOR) == []
        ana.page.wait_for_function(f"() => ({MEDIATOR})().length > 0", timeout=60_000, polling=100)
        [shown] = ana.page.evaluate(MEDIATOR)
        assert shown["busy"] is None
        ana.page.wait_for_function(
            "t => !document.body.innerText.includes(t)", arg=TYPING, timeout=30_000
        )
        ana.only_own_host()
    finally:
        ana.close()


def test_with_show_drafts_the_reply_grows_in_place_and_is_announced_once(
    browser: Any, site_server: AppServer, site_db: Any
) -> None:
    from conversation import study

    code = launch(
        site_db,
        participants={"cap": 2},
        room={"time_limit_seconds": 600, "words_per_minute": 0, "show_drafts": True},
    )
    ana = seated(browser, site_server, site_db, code)
    try:
        # The reply streams: a bubble marked busy whose text grows.
        ana.page.wait_for_function(
            f"() => ({MEDIATOR})().some(m => m.busy === 'true' && m.text.split(' ').length >= 3)",
            timeout=60_000,
            polling=50,
        )
        [growing] = ana.page.evaluate(MEDIATOR)
        ana.page.wait_for_function(
            f"n => ({MEDIATOR})().some(m => m.text.length > n)",
            arg=len(growing["text"]),
            timeout=30_000,
            polling=50,
        )
        # Complete: the same bubble (same place in the log), no longer busy, the final text.
        ana.page.wait_for_function(
            f"() => ({MEDIATOR})().some(m => m.busy === null)", timeout=60_000, polling=50
        )
        final = [m for m in ana.page.evaluate(MEDIATOR) if m["seq"] == growing["seq"]]
        assert len(final) == 1 and final[0]["busy"] is None
        token = study.join(site_db, code, {"PROLIFIC_PID": "pid-partner"}).token
        committed = [
            m for m in study.participant_view(site_db, token).messages if m.speaker == "Mediator"
        ]
        assert committed and committed[0].content == final[0]["text"]
        assert str(committed[0].seq) == growing["seq"]
        ana.only_own_host()
    finally:
        ana.close()
