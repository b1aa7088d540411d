"""Comprehension checks and conditional questions (issue 33), through the public API: right
answers (choices, or text ignoring case, accents and surrounding space), attempts, an
explanation after a wrong try, failing with its own exit status and code (in attrition), and
questions asked only when earlier answers meet their condition."""

from __future__ import annotations

from typing import Any

import pytest

import storage
from conversation import study as S
from conversation.exceptions import ConversationValueError
from conversation.study.definition.checks import is_correct, normalized
from tests.conversation.study.helpers import definition_dict

CAPITAL = {
    "question_name": "capital",
    "question_type": "free_text",
    "question_text": "Which city is the capital of Colombia?",
    "correct": ["Bogotá", "Bogota DC"],
    "attempts": 2,
    "explanation": "It is Bogotá.",
}
ROLE = {
    "question_name": "your_role",
    "question_type": "multiple_choice",
    "question_text": "Who sets the price?",
    "question_options": ["the buyer", "nobody: you bargain"],
    "correct": "nobody: you bargain",
}


def _study(db: storage.Database, pre: list[dict[str, Any]], **codes: str) -> S.Study:
    data = definition_dict(pre_survey=pre)
    data["exit"]["codes"] = {**data["exit"]["codes"], "failed_check": "CFAIL", **codes}
    return S.launch_study(db, S.definition_from_dict(data))


def _consented(db: storage.Database, code: str, pid: str) -> S.ParticipantToken:
    token = S.join(db, code, {"PROLIFIC_PID": pid})
    S.give_consent(db, token.token)
    return token


@pytest.mark.parametrize(
    ("answer", "right"),
    [("bogota", True), ("  BOGOTÁ ", True), ("bogota dc", True), ("Medellín", False), ("", False)],
)
def test_text_is_compared_ignoring_case_accents_and_surrounding_space(
    answer: str, right: bool
) -> None:
    assert is_correct(CAPITAL["correct"], answer) is right
    assert normalized("  Ça Va ") == "ca va"


def test_a_wrong_try_explains_and_a_right_one_moves_on(db: storage.Database) -> None:
    study = _study(db, [CAPITAL, ROLE])
    token = _consented(db, study.code, "p1")
    view = S.participant_view(db, token.token)
    assert all("correct" not in q and "explanation" not in q for q in view.questions)
    wrong = S.answer_survey(
        db, token.token, {"capital": "Lima", "your_role": "nobody: you bargain"}
    )
    assert wrong.stage == "pre_survey"
    assert [(f.question_name, f.explanation, f.attempts_left) for f in wrong.check_feedback] == [
        ("capital", "It is Bogotá.", 1)
    ]
    right = S.answer_survey(
        db, token.token, {"capital": " bogota ", "your_role": "nobody: you bargain"}
    )
    assert right.stage == "lobby" and right.check_feedback == []
    tries = [e for e in S.study_events_table(db, study.code) if e["kind"] == "check_attempt"]
    assert [t["data"]["wrong"] for t in tries] == [["capital"], []]
    assert [t["data"]["attempt"] for t in tries] == [1, 2]


def test_out_of_attempts_the_path_ends_with_its_own_status_and_code(db: storage.Database) -> None:
    study = _study(db, [ROLE])  # one attempt
    token = _consented(db, study.code, "p1")
    out = S.answer_survey(db, token.token, {"your_role": "the buyer"})
    assert out.stage == "exit" and out.exit is not None
    assert (out.exit.status, out.exit.code) == ("failed_check", "CFAIL")
    assert "cc=CFAIL" in (out.exit.redirect or "")
    row = S.participants_table(db, study.code)[0]
    assert row["exit_status"] == "failed_check"
    summary = next(s for s in S.list_studies(db) if s.study.code == study.code)
    assert summary.participants.get("failed_check") == 1
    before = S.study_monitor(db, study.code).attrition[-1]  # left before assignment
    assert before.condition == S.BEFORE_ASSIGNMENT and before.left_by == {"failed_check": 1}


def test_a_study_with_checks_needs_the_failed_check_code() -> None:
    data = definition_dict(pre_survey=[ROLE])
    with pytest.raises(ConversationValueError, match="exit.codes.failed_check"):
        S.definition_from_dict(data)


LIKED = {
    "question_name": "liked",
    "question_type": "multiple_choice",
    "question_text": "Did you like the mediator?",
    "question_options": ["yes", "no"],
}
WHY_NOT = {
    "question_name": "why_not",
    "question_type": "free_text",
    "question_text": "What went wrong?",
    "show_if": {
        "any": [
            {"question": "liked", "value": "no"},
            {
                "all": [
                    {"question": "bargained_before", "value": "yes"},
                    {"question": "liked", "op": "!=", "value": "yes"},
                ]
            },
        ]
    },
}


def test_a_conditional_question_is_asked_only_when_its_condition_holds(
    db: storage.Database,
) -> None:
    data = definition_dict()
    data["pre_survey"] = [*data["pre_survey"], LIKED, WHY_NOT]
    study = S.launch_study(db, S.definition_from_dict(data))
    token = _consented(db, study.code, "p1")
    view = S.participant_view(db, token.token)
    assert view.questions[-1]["show_if"]["any"][0] == {
        "question": "liked",
        "op": "==",
        "value": "no",
    }
    # Not asked: no answer needed (and one given anyway is not kept).
    moved = S.answer_survey(
        db, token.token, {"bargained_before": "no", "liked": "yes", "why_not": "n/a"}
    )
    assert moved.stage == "lobby"
    assert storage.get_participant(db, token.participant_id).pre_survey == {
        "bargained_before": "no",
        "liked": "yes",
    }
    other = _consented(db, study.code, "p2")
    with pytest.raises(ConversationValueError, match="Please answer: What went wrong"):
        S.answer_survey(db, other.token, {"bargained_before": "no", "liked": "no"})


@pytest.mark.parametrize(
    ("on", "show_if", "expected"),
    [
        ("liked", {"question": "why_not", "value": "x"}, "[1].show_if: 'why_not' comes later"),
        ("liked", {"question": "liked", "value": "x"}, "'liked' comes later (or is this"),
        ("why_not", {"question": "ghost", "value": "x"}, "'ghost' is not a question"),
        ("why_not", {"question": "liked", "value": "maybe"}, "['maybe'] are not options"),
        ("why_not", {"question": "liked", "op": "in", "value": "no"}, "op 'in' takes a list"),
        ("why_not", {"question": "liked", "all": []}, "must be one comparison"),
    ],
)
def test_a_bad_condition_is_refused_naming_the_question(
    on: str, show_if: dict[str, Any], expected: str
) -> None:
    data = definition_dict()
    questions = {"liked": dict(LIKED), "why_not": dict(WHY_NOT)}
    questions[on]["show_if"] = show_if
    data["pre_survey"] = [*data["pre_survey"], questions["liked"], questions["why_not"]]
    with pytest.raises(ConversationValueError, match="pre_survey") as error:
        S.definition_from_dict(data)
    assert expected in str(error.value)
