"""Follow-up EDSL questions over transcripts: tidy rows, literal text, failures raised, forms checked."""

from __future__ import annotations

import pytest
from edsl import QuestionFreeText, QuestionYesNo, Results, Scenario, ScenarioList

from conversation.analysis.questions import (
    Analysis,
    analyze,
    answer_from_reply,
    question_from_spec,
    reproduces_transcript,
)
from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel


def record(turn: int, speaker: str, text: str) -> dict:
    return {"turn": turn, "speaker": speaker, "speaker_index": turn % 2, "text": text}


DEAL = [record(0, "Alice", "I offer 100 for the mug"), record(1, "Bob", "120 and it's yours. DEAL")]
NO_DEAL = [record(0, "Alice", "I offer 100 for the mug"), record(1, "Bob", "No. 200 or nothing.")]
DEAL_QUESTION = {"type": "yes_no", "name": "deal_reached", "text": "Was a deal reached?"}


def test_was_a_deal_reached_over_two_transcripts():
    model = OfflineModel()
    analysis = analyze(
        [question_from_spec(DEAL_QUESTION)],
        [{"transcript": DEAL, "room": "r-deal"}, {"transcript": NO_DEAL, "room": "r-none"}],
        model=model,
    )
    assert isinstance(analysis, Analysis)
    assert [r["deal_reached"] for r in analysis.rows] == ["Yes", "No"]
    assert [r["room"] for r in analysis.rows] == ["r-deal", "r-none"]
    assert [r["scenario_index"] for r in analysis.rows] == [0, 1]
    assert all("transcript" not in r for r in analysis.rows)
    assert analysis.rows[0]["deal_reached_comment"] == "A message (Bob) announces a deal."
    assert isinstance(analysis.results, Results) and len(analysis.results) == 2
    assert (
        list(analysis) == analysis.rows and len(analysis) == 2 and analysis[1]["room"] == "r-none"
    )
    assert model.calls == 2


def test_scenario_lists_and_several_question_types():
    questions = [
        question_from_spec(DEAL_QUESTION),
        question_from_spec(
            {"type": "numerical", "name": "price", "text": "{{ transcript }} Final price?"}
        ),
        question_from_spec(
            {
                "type": "multiple_choice",
                "name": "last",
                "text": "Who spoke last?",
                "options": ["Alice", "Bob"],
            }
        ),
        question_from_spec({"type": "free_text", "name": "summary", "text": "Summarize."}),
    ]
    scenarios = ScenarioList([Scenario({"transcript": DEAL}), Scenario({"transcript": NO_DEAL})])
    rows = analyze(questions, scenarios, model=OfflineModel()).rows
    assert [r["price"] for r in rows] == [120, 200]
    assert all(r["last"] in ("Alice", "Bob") for r in rows)
    assert rows[1]["summary"].startswith("2 messages between Alice and Bob")


def test_transcript_text_reaches_the_model_literally_as_message_lines():
    model = OfflineModel()
    hostile = [record(0, "Alice", "Look {{ 7*7 }} and {% if 1 %}x{% endif %}")]
    analyze(question_from_spec(DEAL_QUESTION), {"transcript": hostile}, model=model)
    [(_, prompt)] = model.prompts
    assert "7*7" in prompt and "49" not in prompt
    assert "0. Alice: Look" in prompt  # one line per message, not a Python repr


def test_default_model_is_offline_here():
    rows = analyze(question_from_spec(DEAL_QUESTION), [{"transcript": DEAL}]).rows
    assert rows[0]["deal_reached"] == "Yes"


def test_an_invalid_answer_is_a_failure_and_never_a_none_in_the_table():
    question = question_from_spec(DEAL_QUESTION)
    outcome = analyze(question, [{"transcript": DEAL}], model=OfflineModel(replies=["maybe"]))
    assert "deal_reached" not in outcome.rows[0]
    [failure] = outcome.failures
    assert (failure.scenario_index, failure.question, failure.raw) == (0, "deal_reached", "maybe")
    assert "validation" in failure.reason and failure.code == "invalid_answer"
    assert failure.to_error()["raw"] == "maybe"
    rows = analyze(question, [{"transcript": DEAL}], model=OfflineModel(replies=["Yes"])).rows
    assert rows[0]["deal_reached"] == "Yes"  # control: a parsable answer passes


def test_one_invalid_answer_keeps_every_valid_one():
    question = question_from_spec(DEAL_QUESTION)
    scenarios = [{"transcript": DEAL, "n": i} for i in range(4)]

    def reply(user_prompt, system_prompt):
        return "maybe" if "REFUSE" in user_prompt else "No"

    scenarios[2]["transcript"] = [record(0, "Alice", "REFUSE this")]
    outcome = analyze(question, scenarios, model=OfflineModel(func=reply))
    assert [r.get("deal_reached") for r in outcome.rows] == ["No", "No", None, "No"]
    assert [(f.scenario_index, f.raw) for f in outcome.failures] == [(2, "maybe")]


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("No\n\nYes", "No"),  # EDSL reads the first line
        ('{"answer": "Yes"}', "Yes"),  # EDSL reads the JSON
        ("**Yes**, they agreed at $7.", "Yes"),  # its first word is the option
        ("Answer: no.", "No"),
    ],
)
def test_common_reply_shapes_are_read(reply, answer):
    question = question_from_spec(DEAL_QUESTION)
    outcome = analyze(question, [{"transcript": DEAL}], model=OfflineModel(replies=[reply]))
    assert outcome.rows[0]["deal_reached"] == answer and not outcome.failures


@pytest.mark.parametrize(
    "reply",
    [
        "maybe",
        "Yes or No, hard to say",
        "",
        # issue 35: an option named inside a reply that does not answer is not an answer
        "You can't beat the price of $8; no doubt about it",
        "I would say **Yes**, they agreed.",
    ],
)
def test_a_reply_that_does_not_start_with_an_option_is_no_answer(reply):
    question = question_from_spec(DEAL_QUESTION)
    assert answer_from_reply(question, reply) is None


def test_only_the_start_of_a_reply_answers_a_multiple_choice_question():
    question = question_from_spec(
        {"type": "multiple_choice", "name": "o", "text": "How?", "options": ["deal", "no deal"]}
    )
    assert answer_from_reply(question, "It ended with no deal at all.") is None
    assert answer_from_reply(question, "No deal: they parted.") == "no deal"  # the longest
    assert answer_from_reply(question, "A DEAL.") is None
    assert answer_from_reply(question, "*Deal*, at $7") == "deal"


def test_a_reply_that_reproduces_the_transcript_is_a_failure_not_an_answer():
    """Issue 35: SmolLM2 echoed the transcript ("(oldest first, one message per line)\n1. user:
    ...") and the chart counted it. Refused even where an option could be read from it."""
    question = question_from_spec(DEAL_QUESTION)
    echo = "(oldest first, one message per line)\n1. Alice: I offer 100 for the mug"
    copied = "No\nBob: 120 and it's yours. DEAL"
    answers = {"room 0": "Yes", "room 1": echo, "room 2": copied}
    scenarios = [{"transcript": [*DEAL, record(2, "Cara", f"room {i}")]} for i in range(3)]

    def reply(user_prompt, system_prompt):
        return next(text for marker, text in answers.items() if marker in user_prompt)

    outcome = analyze(question, scenarios, model=OfflineModel(func=reply))
    assert [r.get("deal_reached") for r in outcome.rows] == ["Yes", None, None]
    assert [(f.scenario_index, f.code) for f in outcome.failures] == [
        (1, "reproduced_transcript"),
        (2, "reproduced_transcript"),
    ]
    assert "reproduced the transcript" in outcome.failures[0].reason
    offer = ("i", "offer", "100", "for", "the", "mug")
    assert not reproduces_transcript("No, they did not agree.", [offer])
    assert reproduces_transcript("Alice: I offer 100 for the mug!", [offer])


def test_a_failing_model_raises_after_edsls_own_attempts(monkeypatch):
    from edsl.interviews.answering_function import RetryConfig

    monkeypatch.setattr(RetryConfig, "EDSL_BACKOFF_START_SEC", 0.0)

    def down(user_prompt, system_prompt):
        raise ConnectionError("provider down")

    model = OfflineModel(func=down)
    outcome = analyze(question_from_spec(DEAL_QUESTION), [{"transcript": DEAL}], model=model)
    [failure] = outcome.failures
    assert failure.code == "no_answer" and failure.raw is None
    assert model.calls >= 1


@pytest.mark.parametrize(
    ("questions", "scenarios", "expected"),
    [
        ([], [{"transcript": DEAL}], "questions is empty"),
        (
            ["Was a deal reached?"],
            [{"transcript": DEAL}],
            r"questions\[0\] must be an EDSL question",
        ),
        (
            [
                QuestionFreeText(question_name="a", question_text="x"),
                QuestionYesNo(question_name="a", question_text="y"),
            ],
            [{"transcript": DEAL}],
            r"\['a'\] appear more than once",
        ),
        ([QuestionFreeText(question_name="a", question_text="x")], [], "scenarios is empty"),
        ([QuestionFreeText(question_name="a", question_text="x")], "text", "scenarios must be"),
        ([QuestionFreeText(question_name="a", question_text="x")], [3], r"scenarios\[0\] must be"),
        (
            [QuestionFreeText(question_name="a", question_text="{{ transcript }} {{ room }}")],
            [{"transcript": DEAL}],
            r"scenarios\[0\] has no field\(s\) \['room'\]",
        ),
        (
            [QuestionFreeText(question_name="a", question_text="x")],
            [{"transcript": DEAL, "analysis_row": 1}],
            "reserved field",
        ),
    ],
)
def test_bad_analysis_input_is_named(questions, scenarios, expected):
    with pytest.raises(ConversationValueError, match=expected):
        analyze(questions, scenarios, model=OfflineModel())


def _nested(depth: int) -> object:
    value: object = "deal"
    for _ in range(depth):
        value = {"deeper": value}
    return value


@pytest.mark.parametrize("depth", [10, 50, 5_000])
def test_scenario_values_nested_past_the_limit_are_refused_naming_the_field(depth):
    # Nested 1,000 deep this was a plain RecursionError, and 50 deep it was accepted; the
    # documented limit (text.limits.MAX_DEPTH, 10 levels) holds here as at every other door.
    question = QuestionFreeText(question_name="a", question_text="{{ transcript }}")
    scenario = {"transcript": DEAL, "notes": _nested(depth)}
    with pytest.raises(
        ConversationValueError, match=r"scenarios\[0\]\.notes is nested more than 10"
    ):
        analyze([question], [scenario], model=OfflineModel())


def test_scenario_values_at_the_limit_are_analysed():
    question = QuestionFreeText(question_name="a", question_text="{{ transcript }}")
    (row,) = analyze([question], [{"transcript": DEAL, "notes": _nested(9)}], model=OfflineModel())
    assert row["notes"] == _nested(9)


# -- question_from_spec ---------------------------------------------------------------------


def test_specs_build_edsl_questions():
    yes_no = question_from_spec(DEAL_QUESTION)
    assert type(yes_no).__name__ == "QuestionYesNo"
    assert yes_no.question_text == "Transcript:\n{{ transcript }}\n\nWas a deal reached?"
    kept = question_from_spec(
        {"type": "free_text", "name": "s", "text": "Read {{ transcript }} now."}
    )
    assert kept.question_text == "Read {{ transcript }} now."
    choice = question_from_spec(
        {"type": "multiple_choice", "name": "c", "text": "Who?", "options": ["A", "{{ B }}"]}
    )
    assert choice.question_options == ["A", "{\u200b{ B }}"]  # options are data, never templates
    number = question_from_spec(
        {"type": "numerical", "name": "n", "text": "How much?", "min_value": 0, "max_value": 10}
    )
    assert (number.min_value, number.max_value) == (0, 10)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("yes_no", "must be a dict"),
        ({**DEAL_QUESTION, "type": "ranking"}, "type 'ranking' is not supported"),
        ({**DEAL_QUESTION, "name": "Deal Reached"}, "name 'Deal Reached'"),
        ({**DEAL_QUESTION, "name": "class"}, "name 'class'"),
        ({**DEAL_QUESTION, "text": "  "}, "text must be non-empty"),
        ({**DEAL_QUESTION, "text": "x" * 5000}, "the limit is"),
        ({**DEAL_QUESTION, "text": "{{ ''.__class__.__mro__ }}"}, "question text"),
        ({**DEAL_QUESTION, "text": "{{ transcript | upper }}"}, "plain placeholders"),
        ({**DEAL_QUESTION, "text": "{% if transcript %}x{% endif %}"}, "plain placeholders"),
        ({**DEAL_QUESTION, "text": "{{ secret_key }}"}, r"unknown variable\(s\) \['secret_key'\]"),
        ({**DEAL_QUESTION, "text": "{{ transcript"}, "not a valid template"),
        ({**DEAL_QUESTION, "colour": "red"}, r"unknown field\(s\) \['colour'\]"),
        ({**DEAL_QUESTION, "options": ["a", "b"]}, "'options' does not apply"),
        (
            {"type": "multiple_choice", "name": "c", "text": "Who?", "options": ["A"]},
            "2 to 30 choices",
        ),
        (
            {"type": "multiple_choice", "name": "c", "text": "Who?", "options": ["A", "A"]},
            "distinct",
        ),
        (
            {"type": "multiple_choice", "name": "c", "text": "Who?", "options": ["A", 2]},
            r"options\[1\]",
        ),
        (
            {"type": "numerical", "name": "n", "text": "How much?", "min_value": 5, "max_value": 5},
            "below max_value",
        ),
        (
            {"type": "numerical", "name": "n", "text": "How much?", "min_value": True},
            "min_value must be",
        ),
    ],
)
def test_bad_specs_name_the_field(spec, expected):
    with pytest.raises(ConversationValueError, match=expected):
        question_from_spec(spec)
