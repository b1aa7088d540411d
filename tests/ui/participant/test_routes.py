"""The participant's page through its routes (what the AppTests of the Streamlit page proved, now
against the page's own API): each stage (consent, pre-survey, lobby, room, post-survey, exit),
the refusals (a forged token, a link without a code, a locked study, another room's id) and the
answers a refused act gets (too long, too fast, the wrong stage), all over real HTTP."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from conversation import study
from tests.ui.participant.conftest import Site, seated, small_study
from ui.participant.routes import CSP, NOT_VALID


def test_the_page_and_its_files_come_from_this_host_with_a_strict_policy(site: Site) -> None:
    page = site.client.get("/participate", params={"study": "X", "PROLIFIC_PID": "p"})
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert page.headers["content-security-policy"] == CSP
    assert "default-src 'none'" in CSP and "http" not in CSP  # no other host, ever
    assert page.headers["referrer-policy"] == "no-referrer"
    # Every file the page names is served here, from this host (a browser test records every
    # request the page makes and fails on any other host).
    named = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert named and all(n.startswith("/study/static/") for n in named), named
    for path in named:
        assert site.client.get(path).status_code == 200, path
    assert "url(" not in site.client.get("/study/static/page.css").text  # no font, no image
    assert site.client.get("/study/static/../routes.py").status_code == 404
    assert site.client.get("/study/static/secret.txt").status_code == 404
    cached = site.client.get("/study/static/page.js", headers={"If-None-Match": served_etag(site)})
    assert cached.status_code == 304


def served_etag(site: Site) -> str:
    return str(site.client.get("/study/static/page.js").headers["etag"])


def test_joining_keeps_the_labels_and_the_recruitment_id_apart(site: Site) -> None:
    code = small_study(site.db)
    token = site.join(code, PROLIFIC_PID="pid-1", STUDY_ID="s", SESSION_ID="x", extra="7")
    view = site.view(token)
    assert view["stage"] == "consent" and "research study on negotiation" in view["consent"]
    assert view["study_name"] == "Mug bargaining with a mediator"
    [row] = study.participants_table(site.db, code)
    assert row["labels"] == {"extra": "7"} and "pid-1" not in str(row)
    assert study.recruitment_table(site.db, code)[0]["PROLIFIC_PID"] == "pid-1"
    # The same PROLIFIC_PID returns to the same person.
    again = site.client.post(
        "/study/api/join", json={"study": code, "params": {"PROLIFIC_PID": "pid-1"}}
    ).json()
    assert again["resumed"] is True
    assert len(study.participants_table(site.db, code)) == 1


def test_a_link_without_a_code_a_forged_token_and_a_locked_study_are_refused(site: Site) -> None:
    missing = site.client.post("/study/api/join", json={"params": {}})
    assert missing.status_code == 403 and "no study code" in missing.json()["error"]
    forged = site.client.get("/study/api/view", params={"p": "forged-token-0123456789"})
    assert forged.status_code == 403 and forged.json()["error"] == NOT_VALID
    assert site.act("consent", "forged-token-0123456789", agree=True).status_code == 403
    stream = site.client.get("/study/api/events", params={"p": "forged-token-0123456789"})
    assert stream.status_code == 403
    code = small_study(site.db)
    study.lock_study(site.db, code)
    locked = site.client.post("/study/api/join", json={"study": code, "params": {}})
    assert locked.status_code == 403
    assert "not taking participants right now" in locked.json()["error"]


def test_declining_ends_with_the_declined_code_and_its_redirect(site: Site) -> None:
    code = small_study(site.db)
    token = site.join(code)
    assert site.act("consent", token, agree=False).status_code == 200
    view = site.view(token)
    assert view["stage"] == "exit"
    assert view["exit"]["code"] == "CMUG0002" and "chose not to take part" in view["exit"]["text"]
    assert view["exit"]["redirect"].endswith("cc=CMUG0002")


def test_consent_then_the_pre_survey_checked_then_the_lobby(site: Site) -> None:
    code = small_study(site.db)
    token = site.join(code)
    site.act("consent", token, agree=True)
    view = site.view(token)
    assert view["stage"] == "pre_survey"
    assert view["questions"][0]["question_text"].startswith("Have you bargained")
    refused = site.act("survey", token, answers={})
    assert refused.status_code == 422 and site.view(token)["stage"] == "pre_survey"
    assert site.act("survey", token, answers={"bargained_before": "no"}).status_code == 200
    view = site.view(token)
    assert view["stage"] == "lobby" and view["waiting_for"] == 1
    [row] = study.participants_table(site.db, code)
    assert row["pre_bargained_before"] == "no"


def test_two_people_chat_in_their_own_seats_and_a_resend_is_one_message(site: Site) -> None:
    code = small_study(site.db)
    ana, bo = seated(site, code)
    seat = site.view(ana)["seat"]
    assert seat in ("Buyer", "Seller") and site.view(bo)["seat"] != seat
    first = site.act("post", ana, text="Hello from the first person", request_id="r-1")
    assert first.status_code == 200
    again = site.act("post", ana, text="Hello from the first person", request_id="r-1")
    assert again.json()["seq"] == first.json()["seq"]  # a double submit is one message
    site.act("post", ana, text="a second message", request_id="r-2")
    seen = {m["content"]: m for m in site.view(bo)["messages"]}
    assert seen["Hello from the first person"]["speaker"] == seat
    assert not seen["Hello from the first person"]["own"]
    mine = {m["content"]: m for m in site.view(ana)["messages"]}
    assert mine["Hello from the first person"]["own"]
    said = [r["content"] for r in study.transcripts_table(site.db, code)]
    assert said.count("Hello from the first person") == 1 and "a second message" in said


def test_the_view_names_no_room_and_no_act_takes_one(site: Site) -> None:
    code = small_study(site.db, participants={"cap": 4, "heartbeat_seconds": 1})
    ana, bo = seated(site, code)
    site.act("post", ana, text="only for my room", request_id="r")
    cy, di = seated_more(site, code)
    view = site.client.get("/study/api/view", params={"p": cy, "room": "1"}).json()
    assert "room_id" not in view and "token" not in str(view)
    assert "only for my room" not in str(view)
    assert bo and di


def seated_more(site: Site, code: str) -> list[str]:
    """Two more people, in a second group (the first study's groups=1 per condition)."""
    tokens = []
    for n in (7, 8):
        token = site.join(code, PROLIFIC_PID=f"pid-{n}")
        site.act("consent", token, agree=True)
        site.act("survey", token, answers={"bargained_before": "yes"})
        tokens.append(token)
    study.tick(site.db, code)
    return tokens


def test_refused_posts_say_why(site: Site) -> None:
    from conversation.text.limits import MAX_MESSAGE_CHARS

    code = small_study(site.db, participants={"rate": {"messages": 2, "seconds": 60}})
    early = site.join(code)
    wrong = site.act("post", early, text="too early", request_id="e")
    assert wrong.status_code == 409  # at the consent, not in a room
    ana, _ = seated(site, code)
    long = site.act("post", ana, text="x" * (MAX_MESSAGE_CHARS + 1), request_id="l")
    assert long.status_code == 413 and f"{MAX_MESSAGE_CHARS:,}" in long.json()["error"]
    empty = site.act("post", ana, text="   ", request_id="b")
    assert empty.status_code == 422
    for n in range(2):
        assert site.act("post", ana, text=f"fast {n}", request_id=f"f{n}").status_code == 200
    slow = site.act("post", ana, text="one too many", request_id="f3")
    assert slow.status_code == 429 and slow.json()["retry_after"] >= 1
    assert "wait" in slow.json()["error"]
    not_json = site.client.post(
        "/study/api/post", content=b"{", headers={"X-Participant-Token": ana}
    )
    assert not_json.status_code == 400
    huge = site.client.post(
        "/study/api/post", content=b"x" * 300_000, headers={"X-Participant-Token": ana}
    )
    assert huge.status_code == 413


def test_the_room_ends_then_the_post_survey_then_the_completed_code(site: Site) -> None:
    code = small_study(site.db)
    ana, bo = seated(site, code)
    study.tick(site.db, code, now=datetime.now(UTC) + timedelta(seconds=601))
    view = site.view(ana)
    assert view["stage"] == "post_survey"
    answers = {"satisfaction": 4, "mediator_opinion": "Helpful."}
    assert site.act("survey", ana, answers=answers).status_code == 200
    view = site.view(ana)
    assert view["exit"]["code"] == "CMUG0001" and "the study is complete" in view["exit"]["text"]
    assert view["exit"]["redirect"].endswith("cc=CMUG0001")
    row = next(r for r in study.participants_table(site.db, code) if r["exit_status"])
    assert row["post_satisfaction"] == 4 and row["post_mediator_opinion"] == "Helpful."
    assert bo


def test_help_reaches_the_researcher(site: Site) -> None:
    code = small_study(site.db)
    ana, _ = seated(site, code)
    assert site.act("help", ana, text="  ").status_code == 422
    assert site.act("help", ana, text="My partner is silent.").status_code == 200
    monitor = study.study_monitor(site.db, code)
    assert sum(row.help_unread for row in monitor.rows) == 1
