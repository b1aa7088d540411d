"""The participant's page (``/participate``, served by the app's own routes) in Chromium: the
whole path of two people with a push-fed chat, axe-core at every stage and two screen sizes, the
keyboard alone from the link to the redirect, and follow-the-newest with its "New messages" pill.
Every test records each request the pages make and fails on any host but the app's own.

The study's clock runs in the app's runner; the tests move it on where they need an ending
(``study.tick`` with a later time) instead of waiting for it.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.browser.conftest import AppServer
from tests.browser.participant.conftest import (
    SIZES,
    Person,
    check_axe,
    end_rooms,
    launch,
    serious,
    token_of,
)

pytestmark = pytest.mark.browser


def test_two_people_through_the_whole_path_with_a_pushed_chat(
    browser: Any, site_server: AppServer, site_db: Any
) -> None:
    from conversation import study

    code = launch(site_db, participants={"cap": 2, "rate": {"messages": 3, "seconds": 60}})
    ana = Person(browser, site_server, code, "pid-a")
    bo = Person(browser, site_server, code, "pid-b")
    try:
        for person in (ana, bo):
            person.to_room()
        seats = {ana.seat(), bo.seat()}
        assert seats == {"Buyer", "Seller"}
        # Nothing polls: with the room open and quiet, the pages make no request at all.
        ana.wait_text("Mediator")  # the mediator opened, then the room settles
        time.sleep(1.0)
        before = len(ana.requests)
        time.sleep(2.5)
        assert ana.requests[before:] == []
        # A message: on the sender's screen at once, pushed to the partner's.
        ana.message_box().fill("Hello from Ana")
        ana.message_box().press("Enter")
        ana.wait_text("Hello from Ana")
        assert ana.message_box().input_value() == ""
        bo.wait_text("Hello from Ana")
        # Too fast: refused with the reason, the text stays in the box.
        for n in range(3):
            ana.message_box().fill(f"quick {n}")
            ana.message_box().press("Enter")
            if n < 2:
                ana.wait_text(f"quick {n}")
        ana.wait_text("sending messages quickly")
        assert ana.message_box().input_value() == "quick 2"
        # Another room's id, a researcher page and a forged token, from Ana's browser.
        probe = ana.context.new_page()
        token = token_of(ana)
        probe.goto(f"{site_server.url}/participate?study={code}&p={token}&room=1")
        probe.get_by_text("cannot open a room").wait_for()
        probe.get_by_role("heading", name="You are").wait_for()
        probe.goto(f"{site_server.url}/room?room=1&p={token}")
        probe.get_by_text("not part of the study").wait_for()
        assert "Hello from Ana" not in probe.inner_text("body")
        probe.goto(f"{site_server.url}/participate?study={code}&p=forged-{token[::-1]}")
        probe.get_by_text("This link is not valid").wait_for()
        probe.close()
        # The room ends: the post-survey, then the code, the copy button and the redirect.
        end_rooms(site_db, code)
        ana.wait_text("A few last questions")
        ana.page.get_by_role("radio", name="4").check()
        ana.page.get_by_label("What did you think of the mediator?").fill("Helpful.")
        ana.page.get_by_role("button", name="Continue").click()
        ana.wait_text("the study is complete")
        assert ana.page.get_by_label("Your completion code").input_value() == "CMUG0001"
        ana.wait_text("Copy this code into Prolific, or press Continue.")
        ana.context.grant_permissions(["clipboard-read", "clipboard-write"])
        ana.page.get_by_role("button", name="Copy code").click()
        ana.wait_text("Copied.")
        assert ana.page.evaluate("navigator.clipboard.readText()") == "CMUG0001"
        ana.only_own_host()
        ana.page.get_by_role("link", name="Continue").click()
        ana.page.wait_for_url("https://app.prolific.com/**")
        assert ana.page.url.endswith("cc=CMUG0001")
        rows = {r["exit_status"] for r in study.participants_table(site_db, code)}
        assert "completed" in rows
        bo.only_own_host()
    finally:
        ana.close()
        bo.close()


def test_axe_finds_nothing_serious_at_any_stage_on_a_desktop_or_a_phone(
    browser: Any, site_server: AppServer, site_db: Any
) -> None:
    from conversation import study

    code = launch(site_db, participants={"cap": 2})
    ana = Person(browser, site_server, code, "pid-axe")
    report: dict[str, list[str]] = {}
    try:
        ana.page.get_by_role("button", name="I agree").wait_for()
        check_axe(ana, "consent", report)
        ana.page.get_by_role("button", name="I agree").click()
        ana.page.get_by_text("yes", exact=True).wait_for()
        check_axe(ana, "pre-survey", report)
        ana.page.get_by_role("button", name="Continue").click()  # nothing chosen: the error
        ana.wait_text("Please answer every question")
        check_axe(ana, "pre-survey with its error", report)
        ana.page.get_by_text("yes", exact=True).click()
        ana.page.get_by_role("button", name="Continue").click()
        ana.wait_text("Waiting for 1 more person")
        check_axe(ana, "lobby", report)
        partner = study.join(site_db, code, {"PROLIFIC_PID": "pid-partner"}).token
        study.give_consent(site_db, partner)
        study.answer_survey(site_db, partner, {"bargained_before": "no"})
        ana.seat()
        study.post_as_participant(site_db, partner, "Hello, shall we start?", request_id="h")
        ana.wait_text("Hello, shall we start?")
        ana.message_box().fill("a message not sent yet")
        check_axe(ana, "room", report)
        end_rooms(site_db, code)
        ana.wait_text("A few last questions")
        check_axe(ana, "post-survey", report)
        ana.page.get_by_role("radio", name="5").check()
        ana.page.get_by_label("What did you think of the mediator?").fill("Fine.")
        ana.page.get_by_role("button", name="Continue").click()
        ana.wait_text("the study is complete")
        check_axe(ana, "exit", report)
        ana.only_own_host()
        # A negative control: a button without a name is a critical violation axe reports.
        ana.page.evaluate(
            "document.querySelector('main').appendChild(document.createElement('button'))"
        )
        assert any(v.startswith("button-name") for v in serious(ana.page))
    finally:
        ana.close()
    assert {k: v for k, v in report.items() if v} == {}
    assert len(report) == 14  # 7 states x 2 sizes, each checked


def test_the_keyboard_alone_goes_from_the_link_to_the_redirect(
    browser: Any, site_server: AppServer, site_db: Any
) -> None:
    from conversation import study

    code = launch(site_db, participants={"cap": 2})
    ana = Person(browser, site_server, code, "pid-keys")
    page, keys = ana.page, ana.page.keyboard

    def focused() -> str:
        return str(
            page.evaluate(
                "() => { const e = document.activeElement;"
                " return (e.getAttribute('aria-label') || e.labels?.[0]?.innerText"
                " || e.innerText || e.value || e.id || '').trim(); }"
            )
        )

    try:
        page.get_by_role("button", name="I agree").wait_for()
        keys.press("Tab")  # no stray tab stop before the consent button
        assert focused() == "I agree"
        keys.press("Enter")
        ana.wait_text("Before the conversation")
        keys.press("Tab")
        assert focused() == "yes"
        keys.press("Space")
        keys.press("Tab")
        assert focused() == "Continue"
        keys.press("Enter")
        ana.wait_text("Waiting for 1 more person")
        partner = study.join(site_db, code, {"PROLIFIC_PID": "pid-partner"}).token
        study.give_consent(site_db, partner)
        study.answer_survey(site_db, partner, {"bargained_before": "no"})
        ana.seat()
        for _ in range(8):
            keys.press("Tab")
            if focused() == "Your message":
                break
        assert focused() == "Your message"
        keys.type("Typed with the keyboard alone")
        keys.press("Enter")
        ana.wait_text("Typed with the keyboard alone")
        said = [r["content"] for r in study.transcripts_table(site_db, code)]
        assert "Typed with the keyboard alone" in said
        end_rooms(site_db, code)
        ana.wait_text("A few last questions")
        keys.press("Tab")
        assert focused().startswith("1")  # the scale's first choice
        for _ in range(3):
            keys.press("ArrowRight")
        keys.press("Tab")
        assert focused() == "What did you think of the mediator?"
        keys.type("Fine.")
        keys.press("Tab")
        assert focused() == "Continue"
        keys.press("Enter")
        ana.wait_text("the study is complete")
        row = next(r for r in study.participants_table(site_db, code) if r["exit_status"])
        assert row["post_satisfaction"] == 4 and row["post_mediator_opinion"] == "Fine."
        for _ in range(6):
            keys.press("Tab")
            if focused() == "Continue":
                break
        assert focused() == "Continue"
        keys.press("Enter")
        page.wait_for_url("https://app.prolific.com/**")
        assert page.url.endswith("cc=CMUG0001")
    finally:
        ana.close()


def chat_state(page: Any) -> dict[str, Any]:
    return dict(
        page.evaluate(
            """() => { const c = document.getElementById('chat');
            const last = [...document.querySelectorAll('#messages li')].pop();
            const box = last ? last.getBoundingClientRect() : null;
            const area = c.getBoundingClientRect();
            return { atBottom: c.scrollHeight - c.scrollTop - c.clientHeight < 48,
                     pill: !document.getElementById('newer').hidden,
                     lastInView: !!box && box.bottom <= Math.min(area.bottom, innerHeight) + 1
                                 && box.top >= area.top - 1 }; }"""
        )
    )


@pytest.mark.parametrize("size", SIZES, ids=["desktop", "phone"])
def test_the_chat_follows_the_newest_message_or_offers_a_pill(
    browser: Any, site_server: AppServer, site_db: Any, size: dict[str, int]
) -> None:
    from conversation import study

    code = launch(site_db, participants={"cap": 2, "rate": {"messages": 100, "seconds": 60}})
    phone = size["width"] < 500
    ana = Person(
        browser, site_server, code, "pid-follow", viewport=size, is_mobile=phone, has_touch=phone
    )
    try:
        ana.page.get_by_role("button", name="I agree").click()
        ana.page.get_by_text("yes", exact=True).click()
        ana.page.get_by_role("button", name="Continue").click()
        ana.wait_text("Waiting for 1 more person")
        partner = study.join(site_db, code, {"PROLIFIC_PID": "pid-partner"}).token
        study.give_consent(site_db, partner)
        study.answer_survey(site_db, partner, {"bargained_before": "no"})
        ana.seat()
        for n in range(12):
            study.post_as_participant(
                site_db, partner, f"line {n} " + "words " * 25, request_id=f"{n}"
            )
        ana.wait_text("line 11")
        ana.page.wait_for_timeout(300)
        state = chat_state(ana.page)
        assert state["atBottom"] and state["lastInView"] and not state["pill"], state
        # Scrolled up to read: a new message does not move the chat; the pill says it came.
        ana.page.evaluate("document.getElementById('chat').scrollTop = 0")
        ana.page.wait_for_timeout(200)
        study.post_as_participant(site_db, partner, "a newer message", request_id="new")
        ana.wait_text("a newer message")
        state = chat_state(ana.page)
        assert not state["atBottom"] and state["pill"], state
        pill = ana.page.get_by_role("button", name="New messages")
        pill.tap() if phone else pill.click()
        ana.page.wait_for_timeout(200)
        state = chat_state(ana.page)
        assert state["atBottom"] and state["lastInView"] and not state["pill"], state
        # At the bottom, the next message is followed.
        study.post_as_participant(site_db, partner, "and the newest", request_id="newest")
        ana.wait_text("and the newest")
        ana.page.wait_for_timeout(200)
        state = chat_state(ana.page)
        assert state["atBottom"] and state["lastInView"] and not state["pill"], state
        ana.only_own_host()
    finally:
        ana.close()
