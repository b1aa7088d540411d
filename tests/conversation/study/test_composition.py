"""Assignment by composition and presence (issue 33): a condition's group is formed only when
the people present can meet its composition (min/max per pre-survey answer, or any), balanced
among the conditions that can be filled, a sleeping tab never matched, and every draw
re-simulated from what the log recorded."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

import storage
from conversation import study as S
from conversation.exceptions import ConversationValueError
from conversation.study.definition.composition import members
from tests.conversation.study.helpers import definition_dict, launched

STANCE = {
    "question_name": "stance",
    "question_type": "multiple_choice",
    "question_text": "Do you agree that mugs should cost less?",
    "question_options": ["agree", "disagree", "unsure"],
}
ONE_EACH = {"question": "stance", "min": {"agree": 1, "disagree": 1}}


def _composed(**experiment: Any) -> dict[str, Any]:
    data = definition_dict(pre_survey=[STANCE])
    for condition in data["experiment"]["conditions"]:
        condition["composition"] = ONE_EACH
    data["experiment"].update(experiment)
    return data


def _arrive(db: storage.Database, code: str, pid: str, stance: str) -> S.ParticipantToken:
    token = S.join(db, code, {"PROLIFIC_PID": pid})
    S.give_consent(db, token.token)
    S.answer_survey(db, token.token, {"stance": stance})
    return token


def test_a_group_forms_only_when_its_composition_can_be_met(db: storage.Database) -> None:
    study = S.launch_study(db, S.definition_from_dict(_composed()))
    a1 = _arrive(db, study.code, "a1", "agree")
    a2 = _arrive(db, study.code, "a2", "agree")
    assert S.tick(db, study.code).formed == 0  # two who agree: nobody who disagrees
    d1 = _arrive(db, study.code, "d1", "disagree")
    assert S.tick(db, study.code).formed == 1
    group = storage.list_groups(db, study.id)[0]
    seated = {v for v in group.seats.values() if isinstance(v, int)}
    assert seated == {a1.participant_id, d1.participant_id}  # the earliest who fit
    assert S.participant_view(db, a2.token).stage == "lobby"
    record = group.assignment
    assert record["compositions"][group.condition] == {
        "question": "stance",
        "min": {"agree": 1, "disagree": 1},
        "max": {},
    }
    assert record["answers"][str(a2.participant_id)] == {"stance": "agree"}


def test_a_draw_is_re_simulated_from_the_log(db: storage.Database) -> None:
    study = S.launch_study(db, S.definition_from_dict(_composed()))
    stances = ["agree", "unsure", "disagree", "agree", "disagree", "agree", "disagree", "unsure"]
    for i, stance in enumerate(stances):
        _arrive(db, study.code, f"p{i}", stance)
    assert S.tick(db, study.code).formed == 3
    groups = storage.list_groups(db, study.id)
    for group in groups:
        replay = S.replay_draw(group.assignment)
        assert replay is not None
        assert (replay.condition, replay.number, replay.seats) == (
            group.condition,
            group.number,
            group.seats,
        )
    # Balanced among the conditions that could be filled: 2 and 1, never 3 and 0.
    assert sorted(Counter(g.condition for g in groups).values()) == [1, 2]
    # A changed record draws differently (the replay reads the record, nothing else).
    record = dict(groups[0].assignment)
    record["answers"] = {k: {"stance": "unsure"} for k in record["answers"]}
    assert S.replay_draw(record) is None


def test_maximums_and_any(db: storage.Database) -> None:
    rule = {"question": "stance", "min": {"agree": 1}, "max": {"agree": 1}}
    answers = {1: {"stance": "agree"}, 2: {"stance": "agree"}, 3: {"stance": "unsure"}}
    assert members(rule, 2, [1, 2, 3], answers) == [1, 3]  # at most one who agrees
    assert members(rule, 2, [1, 2], answers) is None
    assert members(None, 2, [2, 3], answers) == [2, 3]  # no composition: any
    assert members(rule, 2, [2], answers, fill=True) == [2]  # a lobby timeout: minimums waived


def test_only_people_whose_page_is_alive_are_matched(db: storage.Database) -> None:
    study = launched(db, lobby={"presence_seconds": 20})
    asleep = S.join(db, study.code, {"PROLIFIC_PID": "asleep"})
    S.give_consent(db, asleep.token)
    S.answer_survey(db, asleep.token, {"bargained_before": "no"})
    now = db.now() + timedelta(seconds=30)
    awake = S.join(db, study.code, {"PROLIFIC_PID": "awake"})
    S.give_consent(db, awake.token)
    S.answer_survey(db, awake.token, {"bargained_before": "yes"})
    S.heartbeat(db, awake.token, now=now)
    assert S.tick(db, study.code, now=now).formed == 0  # the first tab went to sleep
    S.heartbeat(db, asleep.token, now=now)  # it wakes up
    assert S.tick(db, study.code, now=now).formed == 1
    record = storage.list_groups(db, study.id)[0].assignment
    assert record["present_within_s"] == 20


@pytest.mark.parametrize(
    ("composition", "expected"),
    [
        ({"question": "nope"}, "composition.question: 'nope' is not a pre-survey question"),
        ({"question": "stance", "min": {"maybe": 1}}, "min: ['maybe'] are not answers"),
        ({"question": "stance", "min": {"agree": 3}}, "counts must be whole numbers from 0"),
        ({"question": "stance", "min": {"agree": 2}, "max": {"agree": 1}}, "is more than its max"),
        (
            {"question": "stance", "max": {"agree": 0, "disagree": 0, "unsure": 1}},
            "fewer than the 2 seats",
        ),
    ],
)
def test_a_bad_composition_is_refused_naming_the_field(
    composition: dict[str, Any], expected: str
) -> None:
    data = _composed()
    data["experiment"]["conditions"][0]["composition"] = composition
    with pytest.raises(ConversationValueError, match="experiment.conditions") as error:
        S.definition_from_dict(data)
    assert expected in str(error.value)
