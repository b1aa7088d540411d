"""A participant sees "<agent> is typing…" while the agent's reply streams, in a real browser, and
never the partial text; once the message lands the line is gone and the message is there.

One person joins in Chromium, their partner through the library (a second browser would only
cost time). The room's opening asks the Mediator to start, so the Mediator drafts as soon as the
room opens; the offline model streams its reply at 3 words a second in the server process
(``ROOMS_OFFLINE_WORDS_PER_SECOND``, as tests/browser/test_streaming_room.py sets it), so the
draft lasts seconds and the server's runner writes partial drafts while the page polls.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.app.study_support import definition_data
from tests.browser.browser_helpers import until, wait_text
from tests.browser.conftest import AppServer

pytestmark = pytest.mark.browser

TIMEOUT_MS = 60_000
TYPING = "Mediator is typing"
#: The Mediator's own messages: bubbles whose speaker line (their first caption) is "Mediator"
#: (the Host's opening names the Mediator in its text).
MEDIATOR_BUBBLES = """() => [...document.querySelectorAll("[data-testid='stChatMessage']")]
    .filter(b => (b.querySelector("[data-testid='stCaptionContainer']")?.innerText || "")
    .trim() === "Mediator").length"""


@pytest.fixture
def typing_server(
    chromium_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AppServer]:
    monkeypatch.setenv("ROOMS_OFFLINE_WORDS_PER_SECOND", "3")
    monkeypatch.setenv("ROOMS_PARTICIPANT_POLL_SECONDS", "0.5")
    monkeypatch.setenv("ROOMS_RUNNER_POLL_SECONDS", "0.2")
    server = AppServer(tmp_path / "typing")
    server.folder.mkdir()
    server.start(timeout=120)
    yield server
    server.stop()


def launch_two_person_study(db: Any) -> str:
    from conversation import study

    data = definition_data(
        pre_survey=[],
        experiment={"groups": 1},
        room={"time_limit_seconds": 600, "words_per_minute": 0},
        participants={"cap": 2, "heartbeat_seconds": 1, "dropout_seconds": 600},
    )
    definition = study.load_definition(json.dumps(data), fmt="json")
    return study.launch_study(db, definition).code


def mediator_bubbles(page: Any) -> int:
    return int(page.evaluate(MEDIATOR_BUBBLES))


def test_a_participant_sees_the_agent_typing_while_it_streams_then_the_message(
    browser: Any, typing_server: AppServer
) -> None:
    from conversation import browse, study

    db = typing_server.database()
    context = browser.new_context(viewport={"width": 900, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        code = launch_two_person_study(db)
        page = context.new_page()
        page.goto(f"{typing_server.url}/participate?study={code}&PROLIFIC_PID=pid-0")
        page.get_by_role("button", name="I agree").click()
        wait_text(page, "matched with other participants", timeout=TIMEOUT_MS)
        partner = study.join(db, code, {"PROLIFIC_PID": "pid-1"}).token
        study.give_consent(db, partner)
        study.heartbeat(db, partner)

        wait_text(page, TYPING, timeout=TIMEOUT_MS)
        # While the line shows, the reply is streaming (a partial draft is stored) and none of
        # it is on the participant's screen.
        room_id = study.participant_view(db, partner).room_id

        def a_few_words() -> Any:
            found = browse.room_draft(db, room_id)
            return found if found is not None and len(found.text.split()) >= 4 else None

        draft = until(a_few_words, timeout=20)
        assert draft is not None and draft.speaker == "Mediator"
        assert TYPING in page.inner_text("body")
        assert mediator_bubbles(page) == 0
        assert draft.text not in page.inner_text("body")

        # The message lands: its bubble appears and the typing line is gone with it.
        page.wait_for_function(f"({MEDIATOR_BUBBLES})() > 0", timeout=TIMEOUT_MS, polling=100)
        committed = [
            m for m in study.participant_view(db, partner).messages if m.speaker == "Mediator"
        ]
        assert committed, "the page shows a Mediator message the partner's view does not have"
        wait_text(page, committed[0].content[:40], timeout=TIMEOUT_MS)
        assert TYPING not in page.inner_text("body")
    finally:
        context.close()
        db.dispose()
