"""The idle rules and the agents' readiness to end (issue 33), applied by the study's clock:
after N seconds with no person writing an agent is woken (its message only it reads, recorded),
after M seconds the room ends (recorded), and an early end waits for the people's minimums."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import storage
from conversation import study as S
from conversation.models import OfflineModel
from conversation.rooms.room import Room
from conversation.vocabulary import EventKind, entry_of
from tests.conversation.study.helpers import launched, seated
from tests.support.room_common import drive_with

IDLE = {"wake_after_seconds": 60, "wake_agent": "Mediator", "end_after_seconds": 180}


def _later(db: storage.Database, tokens: list[S.ParticipantToken], seconds: float) -> Any:
    """A time ``seconds`` after the group started, everyone's page still alive then."""
    person = storage.get_participant(db, tokens[0].participant_id)
    at = storage.get_group(db, int(person.group_id)).started_at + timedelta(seconds=seconds)
    for token in tokens:
        S.heartbeat(db, token.token, now=at)
    return at


def _kinds(db: storage.Database, code: str) -> list[str]:
    return [e["kind"] for e in S.study_events_table(db, code)]


def test_after_n_silent_seconds_the_named_agent_is_woken_once(db: storage.Database) -> None:
    study = launched(db, room={"idle": IDLE})
    tokens = seated(db, study.code, "p1", "p2")
    room_id = S.participant_view(db, tokens[0].token).room_id
    assert room_id is not None
    Room(db, room_id).run(3)  # the mediator's opening turn
    before = len(storage.events(db, room_id))
    S.tick(db, study.code, now=_later(db, tokens, 59))
    assert len(storage.events(db, room_id)) == before and "idle_wake" not in _kinds(db, study.code)
    at = _later(db, tokens, 61)
    S.tick(db, study.code, now=at)
    S.tick(db, study.code, now=at)  # twice: still one wake-up for this silence
    wake = [entry_of(e) for e in storage.events(db, room_id)][before:]
    assert len(wake) == 1 and wake[0].kind is EventKind.HUMAN
    assert wake[0].speaker == "Host" and wake[0].private_to == ("Mediator",)
    assert "@Mediator" in wake[0].content
    assert _kinds(db, study.code).count("idle_wake") == 1
    Room(db, room_id).run(2)
    said = [entry_of(e) for e in storage.events(db, room_id)][-1]
    assert said.speaker == "Mediator" and said.kind is EventKind.AGENT
    # The people never read the wake-up; they read the mediator's answer.
    seen = S.participant_view(db, tokens[0].token).messages
    assert all("Nobody has written" not in m.content for m in seen)
    assert seen[-1].speaker == "Mediator"


def test_after_m_silent_seconds_the_room_ends_and_the_log_says_why(db: storage.Database) -> None:
    study = launched(db, room={"idle": IDLE})
    tokens = seated(db, study.code, "p1", "p2")
    room = Room(db, S.participant_view(db, tokens[0].token).room_id or 0)
    S.post_as_participant(db, tokens[0].token, "Hello")
    room.run(3)  # the agents answer (the worker's part)
    report = S.tick(db, study.code, now=_later(db, tokens, 150))
    assert report.ended == 0  # the person wrote: silence counts from their message
    room.run(3)  # the mediator answers its wake-up: an agent's words are no person's
    report = S.tick(db, study.code, now=_later(db, tokens, 185))
    assert report.ended == 1
    assert S.participant_view(db, tokens[0].token).stage == "post_survey"
    events = S.study_events_table(db, study.code)
    ended = [e for e in events if e["kind"] == "room_ended"][-1]
    assert "nobody wrote for 180 s (idle)" in json.dumps(ended["data"])
    assert "idle_end" in _kinds(db, study.code)


def test_an_early_end_waits_for_the_peoples_minimums(db: storage.Database) -> None:
    study = launched(db, room={"idle": {"end_after_seconds": 60}, "min_messages": 1})
    tokens = seated(db, study.code, "p1", "p2")
    room = Room(db, S.participant_view(db, tokens[0].token).room_id or 0)
    room.run(3)
    assert S.tick(db, study.code, now=_later(db, tokens, 120)).ended == 0  # nobody has written
    S.post_as_participant(db, tokens[0].token, "Hi")
    S.post_as_participant(db, tokens[1].token, "Hello")
    room.run(6)
    assert S.tick(db, study.code, now=_later(db, tokens, 200)).ended == 1


def test_the_room_ends_when_every_agent_is_ready_to_end(db: storage.Database) -> None:
    agents = {"hand_raising": True, "end_when_ready": True}
    study = launched(db, room={"agents": agents})
    tokens = seated(db, study.code, "p1", "p2")
    room_id = S.participant_view(db, tokens[0].token).room_id
    assert room_id is not None
    ready = {"should_respond": True, "reason": "wrap up", "ready_to_end": False, "message": "Hi"}
    model = OfflineModel(replies=[json.dumps(ready), json.dumps({**ready, "ready_to_end": True})])
    room = drive_with(Room(db, room_id), model)
    room.run(2)
    assert S.tick(db, study.code).ended == 0  # its latest decision: not ready
    S.post_as_participant(db, tokens[0].token, "Deal at $7?")
    room.run(2)
    assert S.tick(db, study.code).ended == 1
    assert S.participant_view(db, tokens[1].token).stage == "post_survey"
