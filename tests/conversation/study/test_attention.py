"""Attention checks inside the room (issue 33): a popup the researcher sends from the monitor,
or one scheduled by the definition, answered within its time limit, every step recorded; a
check whose rule says so sends a person who fails it out with ``failed_check``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import storage
from conversation import study as S
from conversation.exceptions import ConversationValueError
from tests.conversation.study.helpers import definition_dict, launched, seated

CHECK = {
    "name": "colour",
    "question_text": "To show you are reading, pick 'blue'.",
    "question_options": ["red", "blue", "green"],
    "correct": "blue",
    "answer_seconds": 30,
}


def _kinds(db: storage.Database, code: str) -> list[str]:
    return [e["kind"] for e in S.study_events_table(db, code)]


def _alive(db: storage.Database, tokens: list[S.ParticipantToken], at: Any) -> Any:
    for token in tokens:
        S.heartbeat(db, token.token, now=at)
    return at


def test_the_researcher_sends_a_check_and_the_person_answers_it(db: storage.Database) -> None:
    study = launched(db)
    a, b = seated(db, study.code, "p1", "p2")
    check_id = S.send_attention_check(db, study.code, a.participant_id, CHECK)
    popup = S.participant_view(db, a.token).attention
    assert popup is not None and popup.check_id == check_id
    assert popup.question_options == ["red", "blue", "green"]
    assert not hasattr(popup, "correct")  # the page is never told the answer
    assert S.participant_view(db, b.token).attention is None  # only the person asked
    assert S.answer_attention_check(db, a.token, check_id, "blue") is True
    assert S.participant_view(db, a.token).attention is None
    with pytest.raises(S.NotNow):
        S.answer_attention_check(db, a.token, check_id, "blue")
    answered = [
        e for e in S.study_events_table(db, study.code) if e["kind"] == "attention_answered"
    ]
    assert answered[0]["data"]["right"] is True and answered[0]["data"]["name"] == "colour"


def test_a_check_not_answered_in_time_is_recorded_as_missed(db: storage.Database) -> None:
    study = launched(db)
    tokens = seated(db, study.code, "p1", "p2")
    check_id = S.send_attention_check(db, study.code, tokens[0].participant_id, CHECK)
    sent = S.participant_view(db, tokens[0].token).attention
    assert sent is not None
    S.tick(db, study.code, now=_alive(db, tokens, sent.deadline - timedelta(seconds=1)))
    assert "attention_missed" not in _kinds(db, study.code)
    S.tick(db, study.code, now=_alive(db, tokens, sent.deadline + timedelta(seconds=1)))
    assert _kinds(db, study.code).count("attention_missed") == 1
    with pytest.raises(S.NotNow):
        S.answer_attention_check(db, tokens[0].token, check_id, "blue")
    assert S.participant_view(db, tokens[0].token).stage == "room"  # "record": they stay


def test_a_scheduled_check_is_put_to_everyone_once_and_a_failing_rule_sends_out(
    db: storage.Database,
) -> None:
    scheduled = {**CHECK, "at_seconds": 60, "on_fail": "exit"}
    study = launched(
        db,
        room={"attention_checks": [scheduled]},
        exit={"codes": {**definition_dict()["exit"]["codes"], "failed_check": "CATTN"}},
    )
    tokens = seated(db, study.code, "p1", "p2")
    person = storage.get_participant(db, tokens[0].participant_id)
    start = storage.get_group(db, int(person.group_id)).started_at
    S.tick(db, study.code, now=_alive(db, tokens, start + timedelta(seconds=59)))
    assert "attention_check" not in _kinds(db, study.code)
    at = _alive(db, tokens, start + timedelta(seconds=61))
    S.tick(db, study.code, now=at)
    S.tick(db, study.code, now=at)
    assert _kinds(db, study.code).count("attention_check") == 2  # each person, once
    popups = [S.participant_view(db, t.token, now=at).attention for t in tokens]
    assert all(p is not None for p in popups)
    assert S.answer_attention_check(db, tokens[0].token, popups[0].check_id, "blue", now=at)
    assert not S.answer_attention_check(db, tokens[1].token, popups[1].check_id, "red", now=at)
    out = S.participant_view(db, tokens[1].token)
    assert out.stage == "exit" and out.exit is not None and out.exit.code == "CATTN"
    assert S.participant_view(db, tokens[0].token).stage == "room"


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        ({**CHECK, "correct": "purple"}, "attention check correct: 'purple' must be one of"),
        ({**CHECK, "answer_seconds": 1}, "attention check answer_seconds must be >= 5"),
        ({k: v for k, v in CHECK.items() if k != "name"}, "attention check name is required"),
    ],
)
def test_a_bad_check_is_refused_naming_the_field(
    db: storage.Database, check: dict[str, Any], expected: str
) -> None:
    study = launched(db)
    a, _ = seated(db, study.code, "p1", "p2")
    with pytest.raises(ConversationValueError) as error:
        S.send_attention_check(db, study.code, a.participant_id, check)
    assert expected in str(error.value)


def test_a_scheduled_check_must_fit_in_the_room_time() -> None:
    data = definition_dict(room={"attention_checks": [{**CHECK, "at_seconds": 590}]})
    with pytest.raises(ConversationValueError, match="must fit in time_limit_seconds"):
        S.definition_from_dict(data)
