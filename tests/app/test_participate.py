"""The participant's page through AppTest: each stage (consent, pre-survey, lobby, room,
post-survey, exit) and the refusals (a forged token, another room's id, a researcher page, a
locked study). Each AppTest is one browser session; the study is the shipped example
(2 people + 1 agent mediator per group)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from conversation import study
from storage import Database
from tests.app.study_support import click, launch, page, participant, texts, token_of

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(autouse=True)
def tick_on_every_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each draw runs the study's tick (the page's once-a-second limit is per process)."""
    monkeypatch.setattr("ui.participant.TICK_SECONDS", 0.0)


def consented(code: str, **params: str):  # type: ignore[no-untyped-def]
    """A participant past consent and the pre-survey (in the lobby)."""
    at = participant(code, **params)
    click(at, "I agree")
    at.radio[0].set_value("yes")
    click(at, "Continue")
    assert not at.exception, at.exception
    return at


def test_the_join_link_draws_the_consent_alone_without_navigation(db: Database) -> None:
    found = launch(db)
    at = participant(found.code, PROLIFIC_PID="pid-1", STUDY_ID="s", SESSION_ID="x", extra="7")
    assert not at.exception, at.exception
    shown = texts(at)
    assert "Mug bargaining with a mediator" in shown
    assert "research study on negotiation" in shown  # the researcher's consent text
    assert [b.label for b in at.button] == ["I agree", "I do not agree"]
    assert not at.sidebar.children or all(not c for c in at.sidebar.children.values())
    assert "Database:" not in shown and "Model:" not in shown  # no researcher sidebar
    # The token went into the URL (a reload returns here) and the labels were kept.
    token = token_of(at)
    assert at.query_params["p"] in (token, [token])
    [row] = study.participants_table(db, found.code)
    assert row["label_extra"] == "7"
    assert "pid-1" not in str(row)  # the recruitment id is only in the recruitment table
    assert study.recruitment_table(db, found.code)[0]["PROLIFIC_PID"] == "pid-1"


def test_a_link_without_a_code_says_so(db: Database) -> None:
    at = page("pages/participate.py")
    assert not at.exception
    assert "no study code" in texts(at)


def test_declining_ends_with_the_declined_code(db: Database) -> None:
    found = launch(db)
    at = participant(found.code)
    click(at, "I do not agree")
    shown = texts(at)
    assert "chose not to take part" in shown
    assert "CMUG0002" in shown
    assert at.get("link_button")[0].proto.url.endswith("cc=CMUG0002")


def test_consent_pre_survey_and_lobby_waiting_for_one_more(db: Database) -> None:
    found = launch(db)
    at = participant(found.code)
    click(at, "I agree")
    assert "Have you bargained" in "\n".join(r.label for r in at.radio)
    click(at, "Continue")  # nothing chosen: said, and the stage stays
    assert "Please answer every question" in texts(at)
    at.radio[0].set_value("no")
    click(at, "Continue")
    assert "Waiting for 1 more person" in texts(at)
    [row] = study.participants_table(db, found.code)
    assert row["stage"] == "lobby" and row["pre_bargained_before"] == "no"


def test_two_people_are_assigned_and_chat_in_their_own_seats(db: Database) -> None:
    found = launch(db)
    ana = consented(found.code)
    bo = consented(found.code)
    ana.run()  # the lobby's poll
    assert not ana.exception, ana.exception
    seat = "Buyer" if "You are **Buyer**" in "\n".join(c.value for c in ana.caption) else "Seller"
    ana.chat_input[0].set_value("Hello from the first person").run()
    assert not ana.exception, ana.exception
    bo.run()
    shown = texts(bo)
    assert "Hello from the first person" in shown
    assert seat in shown
    # The same message seen by its author is marked as theirs.
    ana.run()
    assert f"{seat}** (you)" in "\n".join(c.value for c in ana.caption)


def test_two_texts_under_one_drawn_request_id_are_two_messages_and_a_resend_is_one(
    db: Database,
) -> None:
    """Two runs of one session at once (Streamlit starts the newer message's run while the
    older one still writes) read the same drawn request id: the second text is still its own
    message, not a conflict; the same text again under that id is one message."""
    found = launch(db)
    ana = consented(found.code)
    consented(found.code)
    ana.run()
    drawn = "_participant_request:post"
    for text in ("first text", "second text", "second text"):
        ana.session_state[drawn] = "p-the-same-drawn-id"  # as the overlapping run read it
        ana.chat_input[0].set_value(text).run()
        assert not ana.exception, ana.exception
    said = [r["content"] for r in study.transcripts_table(db, found.code)]
    assert [t for t in said if t.endswith(" text")] == ["first text", "second text"]


def test_a_forged_token_is_refused(db: Database) -> None:
    found = launch(db)
    at = participant(found.code, p="forged-token-0123456789")
    assert not at.exception
    assert "not valid" in texts(at)
    assert not at.button and not at.chat_input


def test_a_researcher_page_with_a_participant_token_is_refused(db: Database) -> None:
    found = launch(db)
    token = token_of(participant(found.code))
    for path in ("pages/room.py", "pages/study_monitor.py", "pages/home.py"):
        at = page(path, p=token, room="1", study=found.code)
        assert not at.exception
        assert "not part of the study" in texts(at)
        assert not at.sidebar.children or all(not c for c in at.sidebar.children.values())


def test_another_rooms_id_reaches_nothing(db: Database) -> None:
    found = launch(db)
    ana, bo = consented(found.code), consented(found.code)
    ana.run()
    ana.chat_input[0].set_value("only for my room").run()
    # A third and fourth person form a second room; the third tries the first room's id.
    cy, di = consented(found.code), consented(found.code)
    rows = study.participants_table(db, found.code)
    first_room = next(r["room_id"] for r in rows if r["room_id"] is not None)
    cy.query_params["room"] = str(first_room)
    cy.run()
    assert not cy.exception
    shown = texts(cy)
    assert "cannot open a room" in shown
    assert "only for my room" not in shown
    assert bo and di


def test_a_locked_study_says_so_politely(db: Database) -> None:
    found = launch(db)
    study.lock_study(db, found.code)
    at = participant(found.code)
    assert "not taking participants right now" in texts(at)
    assert not at.button


def test_the_room_ends_then_post_survey_then_the_completed_code(db: Database) -> None:
    found = launch(db)
    ana, bo = consented(found.code), consented(found.code)
    ana.run()
    later = datetime.now(UTC) + timedelta(seconds=601)
    study.tick(db, found.code, now=later)  # the room's time limit has passed
    ana.run()
    assert "A few last questions" in texts(ana), texts(ana)
    ana.radio[0].set_value(4)
    ana.text_area[0].input("Helpful.")
    click(ana, "Continue")
    shown = texts(ana)
    assert "the study is complete" in shown and "CMUG0001" in shown
    assert ana.get("link_button")[0].proto.url.endswith("cc=CMUG0001")
    row = next(r for r in study.participants_table(db, found.code) if r["exit_status"])
    assert row["post_satisfaction"] == 4 and row["post_mediator_opinion"] == "Helpful."
    assert bo


def test_with_sign_in_configured_the_link_needs_none_and_the_monitor_needs_it(db: Database) -> None:
    from streamlit.testing.v1 import AppTest

    from tests.app.sign_in_support import AUTH, ROLES
    from tests.app.study_support import APP

    found = launch(db)

    def visit(path: str, **params: str) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=60)
        at.secrets["auth"] = AUTH
        at.secrets["roles"] = ROLES
        at.user = {"is_logged_in": False}
        at.switch_page(path)
        for key, value in params.items():
            at.query_params[key] = value
        at.run()
        assert not at.exception, at.exception
        return at

    joined = visit("pages/participate.py", study=found.code)
    assert [b.label for b in joined.button] == ["I agree", "I do not agree"]
    monitor = visit("pages/study_monitor.py", study=found.code)
    assert [b.label for b in monitor.button] == ["Sign in", "Sign in with Keycloak"]
    assert "Mug bargaining" not in texts(monitor)
