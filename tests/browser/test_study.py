"""A study with real people, end to end in Chromium: 6 participant browser contexts join one study
(groups of 2 people + 1 agent mediator) through the join link with Prolific's parameters, consent,
answer the pre-survey, wait in the lobby, are assigned, chat with each other and the agent; one
closes their tab and the study's rule gives their seat to its agent; the rooms end at their time
limit, everyone left answers the post-survey and leaves with the completed code through the
redirect. Then the database and the exports are checked, and a participant's session tries another
room's id, a researcher page and a forged token: each is refused.

Short settings keep it under two minutes: the page polls every 0.5 s, the heartbeat is sent every
second, a participant is dropped after 6 s away, the rooms end after 75 s.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.app.study_support import definition_data
from tests.browser.browser_helpers import post, wait_text
from tests.browser.conftest import AppServer

pytestmark = pytest.mark.browser

PEOPLE = 6
REDIRECT = "https://app.prolific.com/submissions/complete?cc={code}"
TIMEOUT_MS = 60_000


@pytest.fixture
def study_server(
    chromium_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AppServer]:
    monkeypatch.setenv("ROOMS_PARTICIPANT_POLL_SECONDS", "0.5")
    monkeypatch.setenv("ROOMS_PARTICIPANT_HEARTBEAT_SECONDS", "1")
    monkeypatch.setenv("ROOMS_PARTICIPANT_TICK_SECONDS", "0.5")
    monkeypatch.setenv("ROOMS_RUNNER_POLL_SECONDS", "0.2")
    server = AppServer(tmp_path / "study")
    server.folder.mkdir()
    server.start(timeout=60)
    yield server
    server.stop()


def launch(server: AppServer) -> str:
    from conversation import study

    data = definition_data(
        room={"time_limit_seconds": 75, "words_per_minute": 0},
        participants={
            "cap": PEOPLE,
            "heartbeat_seconds": 1,
            "dropout_seconds": 6,
            "on_dropout": "agent",
        },
        lobby={"timeout_seconds": 120, "on_timeout": "agents"},
    )
    data["exit"]["redirect"] = REDIRECT
    db = server.database()
    try:
        definition = study.load_definition(json.dumps(data), fmt="json")
        return study.launch_study(db, definition).code
    finally:
        db.dispose()


def open_link(browser: Any, server: AppServer, code: str, number: int) -> Any:
    """Person ``number``'s own browser context on the join link (with Prolific's parameters)."""
    context = browser.new_context(viewport={"width": 900, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    # The redirect goes to Prolific: answered here (no network), so the URL can be checked.
    context.route(
        "https://app.prolific.com/**",
        lambda route: route.fulfill(
            status=200, body="Prolific stand-in", content_type="text/plain"
        ),
    )
    page = context.new_page()
    page.goto(
        f"{server.url}/participate?study={code}&PROLIFIC_PID=pid-{number}"
        f"&STUDY_ID=prolific-study&SESSION_ID=session-{number}"
    )
    return page


def join_all(browser: Any, server: AppServer, code: str) -> list[Any]:
    """Everyone opens the link, then consents, then answers the pre-survey (step by step for
    all, as people arriving together would)."""
    pages = [open_link(browser, server, code, n) for n in range(PEOPLE)]
    for page in pages:
        page.get_by_role("button", name="I agree").click()
    for page in pages:
        page.get_by_text("yes", exact=True).click()
        page.get_by_role("button", name="Continue").click()
    return pages


def seat_of(page: Any) -> str:
    wait_text(page, "in this conversation", timeout=TIMEOUT_MS)
    found = re.search(r"You are (\w+) in this conversation", page.inner_text("body"))
    assert found, page.inner_text("body")
    return found.group(1)


def token_of(page: Any) -> str:
    return parse_qs(urlsplit(page.url).query)["p"][0]


def finish(page: Any) -> str:
    try:
        wait_text(page, "A few last questions", timeout=2 * TIMEOUT_MS)  # the room's time limit
    except Exception as exc:
        raise AssertionError(f"no post-survey; the page shows:\n{page.inner_text('body')}") from exc
    page.get_by_role("radiogroup").get_by_text("4", exact=True).click()
    page.get_by_label("What did you think of the mediator?").fill("Helpful.")
    page.get_by_role("button", name="Continue").click()
    wait_text(page, "the study is complete", timeout=TIMEOUT_MS)
    # Streamlit's link button opens the redirect in a new tab (the study page stays, with its code).
    with page.context.expect_page(timeout=TIMEOUT_MS) as opened:
        page.get_by_role("link", name="Continue").click()
    prolific = opened.value
    prolific.wait_for_url("https://app.prolific.com/**", timeout=TIMEOUT_MS)
    assert "Prolific stand-in" in prolific.inner_text("body")
    return prolific.url


@pytest.mark.timeout(600)  # a study that never ends fails here, however loaded the machine
def test_six_people_in_three_groups_through_the_whole_study(
    browser: Any, study_server: AppServer
) -> None:
    from conversation import study

    code = launch(study_server)
    pages = join_all(browser, study_server, code)
    seats = [seat_of(p) for p in pages]
    db = study_server.database()
    try:
        rows = {r["participant"]: r for r in study.participants_table(db, code)}
        pid_of = {r["participant"]: r["PROLIFIC_PID"] for r in study.recruitment_table(db, code)}
        by_pid = {pid_of[name]: row for name, row in rows.items()}
        groups = {}
        for n in range(PEOPLE):
            row = by_pid[f"pid-{n}"]
            assert row["seat"] == seats[n]
            groups.setdefault(row["room_id"], []).append(n)
        assert sorted(len(g) for g in groups.values()) == [2, 2, 2]  # 3 groups of 2 people

        # Everyone says hello; the partner sees it, and the agent answers in every room.
        for n, page in enumerate(pages):
            post(page, f"hello from person {n}")
        for members in groups.values():
            a, b = members
            wait_text(pages[a], f"hello from person {b}", timeout=TIMEOUT_MS)
            wait_text(pages[b], f"hello from person {a}", timeout=TIMEOUT_MS)
            wait_text(pages[a], "Mediator", timeout=TIMEOUT_MS)

        # Person 5 closes their tab: after the dropout threshold their seat goes to its agent.
        gone = 5
        pages[gone].context.close()
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            kinds = [e["kind"] for e in study.study_events_table(db, code)]
            if "seat_taken_by_agent" in kinds:
                break
            time.sleep(0.5)
        assert "seat_taken_by_agent" in kinds, kinds

        # Another room's id, a researcher page and a forged token, from person 0's session.
        other_room = next(r for r, members in groups.items() if 0 not in members)
        other_person = groups[other_room][0]
        probe = pages[0].context.new_page()
        token = token_of(pages[0])
        probe.goto(f"{study_server.url}/participate?study={code}&p={token}&room={other_room}")
        wait_text(probe, "cannot open a room", timeout=TIMEOUT_MS)
        wait_text(probe, "in this conversation", timeout=TIMEOUT_MS)
        assert f"hello from person {other_person}" not in probe.inner_text("body")
        probe.goto(f"{study_server.url}/room?room={other_room}&p={token}")
        wait_text(probe, "not part of the study", timeout=TIMEOUT_MS)
        assert f"hello from person {other_person}" not in probe.inner_text("body")
        assert probe.get_by_test_id("stSidebarNavLink").count() == 0
        probe.goto(f"{study_server.url}/participate?study={code}&p=forged-{token[::-1]}")
        wait_text(probe, "not valid", timeout=TIMEOUT_MS)
        probe.close()

        # The rooms end at their time limit; everyone left finishes with the completed code.
        urls = [finish(page) for n, page in enumerate(pages) if n != gone]
        assert all(u.endswith("cc=CMUG0001") for u in urls), urls

        rows = study.participants_table(db, code)
        statuses = {pid_of[r["participant"]]: r["exit_status"] for r in rows}
        assert statuses == {f"pid-{n}": ("dropped" if n == gone else "completed") for n in range(6)}
        assert all(r.get("post_satisfaction") == 4 for r in rows if r["exit_status"] == "completed")
        recruitment = study.recruitment_table(db, code)
        assert {r["SESSION_ID"] for r in recruitment} == {f"session-{n}" for n in range(6)}
        transcripts = study.transcripts_table(db, code)
        assert {"seat", "participant", "condition"} <= set(transcripts[0])
        said = {r["content"]: r for r in transcripts}
        assert said["hello from person 0"]["seat"] == seats[0]
        exported = json.dumps([rows, transcripts, study.study_events_table(db, code)], default=str)
        assert "pid-" not in exported  # recruitment ids only in their own table
        assert token not in exported and token not in study_server.log()
    finally:
        db.dispose()
        for page in pages:
            if not page.is_closed():
                page.context.close()
