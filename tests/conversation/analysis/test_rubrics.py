"""Rubrics: the schema and its errors, content versions, codebook rubrics, and the EDSL questions
each dimension becomes (built, and once asked of EDSL's test model to see what a judge is shown)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conversation.analysis.judges.rubrics import (
    UNIT_FIELDS,
    Dimension,
    IntervalScale,
    OrdinalScale,
    RatioScale,
    Rubric,
)
from conversation.exceptions import ConversationValueError
from conversation.text.safety import ZERO_WIDTH_SPACE

#: "{{ 7*7 }}" as EDSL is given it: a zero-width space breaks the Jinja opener.
INERT = "{" + ZERO_WIDTH_SPACE + "{ 7*7 }}"


def _spec(**changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "Negotiation v1",
        "unit": "room",
        "description": "How the buyer negotiates.",
        "dimensions": [
            {
                "name": "concession",
                "description": "How much does the buyer concede?",
                "scale": {"kind": "ordinal", "points": 5},
                "anchors": {1: "nothing at all", 5: "everything asked"},
                "examples": [{"text": "Fine, {{ 7*7 }} dollars.", "value": 4, "why": "a big move"}],
            },
            {
                "name": "tone",
                "description": "The buyer's tone.",
                "scale": {"kind": "nominal", "labels": ["calm", "angry", "{{ 7*7 }}"]},
                "anchors": {"angry": "raises the voice"},
            },
            {
                "name": "warmth",
                "description": "How warm is the buyer?",
                "scale": {"kind": "ordinal", "labels": ["cold", "warm", "hot"]},
            },
            {
                "name": "price",
                "description": "The final price in dollars.",
                "scale": {"kind": "ratio", "maximum": 1000},
                "anchors": {0: "free", 1000: "the asking price"},
            },
            {
                "name": "mood",
                "description": "Mood from -3 (hostile) to 3 (friendly).",
                "scale": {"kind": "interval", "minimum": -3, "maximum": 3},
            },
        ],
    }
    spec.update(changes)
    return spec


def _dimension(spec: dict[str, Any], index: int, **changes: Any) -> dict[str, Any]:
    edited = json.loads(json.dumps(spec))
    edited["dimensions"][index].update(changes)
    return edited


# --- schema -------------------------------------------------------------------------------------


def test_a_rubric_of_every_scale() -> None:
    rubric = Rubric(**_spec())
    assert [d.name for d in rubric.dimensions] == ["concession", "tone", "warmth", "price", "mood"]
    kinds = [d.level for d in rubric.dimensions]
    assert kinds == ["ordinal", "nominal", "ordinal", "ratio", "interval"]
    assert isinstance(rubric.dimension("price").scale, RatioScale)
    assert rubric.dimension("price").scale.minimum == 0  # a ratio scale starts at its true zero
    assert rubric.dimension("concession").anchors == {
        "1": "nothing at all",
        "5": "everything asked",
    }
    # What agreement() needs: the level, and the order of ordered labels.
    assert rubric.dimension("warmth").order() == ["cold", "warm", "hot"]
    assert rubric.dimension("concession").order() is None
    assert UNIT_FIELDS[rubric.unit] == ("transcript",)


def test_to_dict_and_json_round_trip_to_the_same_rubric_and_version() -> None:
    rubric = Rubric(**_spec())
    again = Rubric.from_dict(json.loads(json.dumps(rubric.to_dict())))
    assert again == rubric and again.version == rubric.version


def test_a_rubric_is_frozen() -> None:
    rubric = Rubric(**_spec())
    with pytest.raises(Exception, match="frozen"):
        rubric.name = "edited"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (_spec(dimensions=[]), ["rubric dimensions", "at least 1 item"]),
        (_spec(unit="word"), ["rubric unit", "'message' or 'room'", "'word'"]),
        (_spec(name=" "), ["rubric name"]),
        (_spec(colour="red"), ["rubric colour", "Extra inputs"]),
        (_dimension(_spec(), 0, name="Concession"), ["dimensions[0].name", "lowercase"]),
        (_dimension(_spec(), 0, name="class"), ["dimensions[0].name", "keyword"]),
        (_dimension(_spec(), 0, scale={"kind": "ordinal", "points": 12}),
         ["dimensions[0].scale.points", "less than or equal to 11", "12"]),
        (_dimension(_spec(), 0, scale={"kind": "ordinal", "points": 3, "labels": ["a", "b"]}),
         ["dimensions[0].scale", "one of the two"]),
        (_dimension(_spec(), 0, anchors={7: "far too much"}),
         ["dimensions[0]", "anchors: '7' is not a level", "levels 1, 2, 3, 4, 5"]),
        (_dimension(_spec(), 0, examples=[{"text": "x", "value": 6}]),
         ["dimensions[0]", "examples[0].value 6 is not on the scale"]),
        (_dimension(_spec(), 1, scale={"kind": "colour"}), ["dimensions[1].scale", "'colour'"]),
        (_dimension(_spec(), 1, scale={"kind": "nominal", "labels": ["calm", "calm"]}),
         ["dimensions[1].scale.labels", "distinct", "'calm'"]),
        (_dimension(_spec(), 1, scale={"kind": "nominal", "labels": ["calm", "a\nb"]}),
         ["dimensions[1].scale.labels", "control characters"]),
        (_dimension(_spec(), 1, scale={"kind": "nominal", "labels": ["calm"]}),
         ["dimensions[1].scale.labels", "at least 2"]),
        (_dimension(_spec(), 3, scale={"kind": "ratio", "minimum": -1}),
         ["dimensions[3].scale.minimum", "greater than or equal to 0", "-1"]),
        (_dimension(_spec(), 4, scale={"kind": "interval", "minimum": 3, "maximum": -3}),
         ["dimensions[4].scale", "minimum (3) must be below maximum (-3)"]),
        (_dimension(_spec(), 4, anchors={"loud": "x"}), ["dimensions[4]", "'loud' is not"]),
        (_dimension(_spec(), 2, shade="x"), ["dimensions[2].shade", "Extra inputs"]),
        (_dimension(_spec(), 1, name="concession"), ["dimensions", "['concession']", "distinct"]),
        (_dimension(_spec(), 1, name="concession_comment"),
         ["dimensions", "reason (the comment) of ['concession']"]),
    ],
)  # fmt: skip
def test_bad_rubrics_name_the_field(spec: dict[str, Any], words: list[str]) -> None:
    with pytest.raises(ConversationValueError) as caught:
        Rubric(**spec)
    assert isinstance(caught.value, ValueError)
    for word in words:
        assert word in str(caught.value)


def test_a_part_on_its_own_names_its_own_fields() -> None:
    with pytest.raises(ConversationValueError, match=r"^dimension scale: minimum \(3\)"):
        Dimension(name="a", description="d", scale={"kind": "interval", "minimum": 3, "maximum": 1})
    with pytest.raises(ConversationValueError, match="ordinalscale points"):
        OrdinalScale(points=1)
    with pytest.raises(ConversationValueError, match="a rubric must be a dict"):
        Rubric.from_dict(["not", "a", "dict"])


# --- versions -----------------------------------------------------------------------------------


def test_the_version_is_the_content() -> None:
    rubric = Rubric(**_spec())
    assert len(rubric.version) == 16 and int(rubric.version, 16) >= 0
    assert Rubric(**_spec()).version == rubric.version  # same content, same version
    # Anchors keyed 1 or "1" (as JSON gives them back) are the same rubric.
    keyed = _dimension(_spec(), 0, anchors={"1": "nothing at all", "5": "everything asked"})
    assert Rubric(**keyed).version == rubric.version
    edits = [
        _spec(name="Negotiation v2"),
        _spec(unit="message"),
        _spec(description="How the buyer bargains."),
        _dimension(_spec(), 0, anchors={1: "nothing", 5: "everything asked"}),
        _dimension(_spec(), 0, examples=[]),
        _dimension(_spec(), 1, scale={"kind": "nominal", "labels": ["angry", "calm", "{{ 7*7 }}"]}),
        _dimension(_spec(), 3, scale={"kind": "ratio", "maximum": 2000}),
    ]
    versions = {Rubric(**edit).version for edit in edits}
    assert len(versions) == len(edits) and rubric.version not in versions


def test_an_edit_changes_only_the_edited_dimensions_version() -> None:
    before = Rubric(**_spec())
    after = Rubric(**_dimension(_spec(), 1, description="The buyer's tone of voice."))
    changed = [
        d.name for d, e in zip(before.dimensions, after.dimensions, strict=True)
        if d.version(before.unit) != e.version(after.unit)
    ]  # fmt: skip
    assert changed == ["tone"]
    # The unit is part of what a dimension's question asks: changing it changes every dimension.
    moved = Rubric(**_spec(unit="message"))
    assert all(
        d.version("room") != m.version("message")
        for d, m in zip(before.dimensions, moved.dimensions, strict=True)
    )


# --- codebooks ----------------------------------------------------------------------------------


def test_a_rubric_from_a_codebook_uses_its_labels() -> None:
    rubric = Rubric.from_codebook("tags v1", ["concession", "threat", "question"])
    (dimension,) = rubric.dimensions
    assert (rubric.unit, dimension.name, dimension.level) == ("message", "code", "nominal")
    assert dimension.scale.levels() == ["concession", "threat", "question"]
    assert rubric.questions()[0].question_options == ["concession", "threat", "question"]
    described = Rubric.from_codebook(
        "tags v1",
        {"concession": "gives ground", "threat": None},
        none_label="none",
        unit="room",
        dimension="main_code",
    )
    only = described.dimension("main_code")
    assert only.scale.levels() == ["concession", "threat", "none"]
    assert only.anchors == {"concession": "gives ground", "none": "none of the other codes fits"}
    assert described.version != rubric.version
    with pytest.raises(ConversationValueError, match=r"dimensions\[0\].scale.labels"):
        Rubric.from_codebook("tags", ["ok", "two\nlines"])
    with pytest.raises(ConversationValueError, match="list of labels"):
        Rubric.from_codebook("tags", "concession")  # type: ignore[arg-type]


# --- EDSL questions -----------------------------------------------------------------------------


def test_each_scale_becomes_its_edsl_question() -> None:
    rubric = Rubric(**_spec())
    questions = rubric.questions()
    assert [(type(q).__name__, q.question_name) for q in questions] == [
        ("QuestionLinearScale", "concession"),
        ("QuestionMultipleChoice", "tone"),
        ("QuestionMultipleChoice", "warmth"),
        ("QuestionNumerical", "price"),
        ("QuestionNumerical", "mood"),
    ]
    concession, tone, warmth, price, mood = questions
    assert concession.question_options == [1, 2, 3, 4, 5]
    assert concession.option_labels == {1: "nothing at all", 5: "everything asked"}
    assert "- 1: nothing at all" in concession.question_text
    assert "Rate it from 1 (lowest) to 5 (highest)." in concession.question_text
    assert "- angry: raises the voice" in tone.question_text
    assert warmth.question_options == ["cold", "warm", "hot"]
    assert "lowest first" in warmth.question_text
    assert (price.min_value, price.max_value) == (0, 1000)
    assert "- 0: free" in price.question_text and "- 1000: the asking price" in price.question_text
    assert (mood.min_value, mood.max_value) == (-3, 3)
    for question in questions:
        assert "{{ transcript }}" in question.question_text
        assert "{{ message }}" not in question.question_text
        # issue 35: the reason comes in the same answer, and the transcript is described as given
        assert question.include_comment
        assert "say in one or two sentences why" in question.question_text
        assert "JSON" not in question.question_text
        assert "one numbered line per message" in question.question_text
    assert rubric.questions_for("tone").score.question_name == "tone"
    assert len(list(rubric.questions_for("tone"))) == 1


def test_a_message_rubric_shows_the_message_and_its_conversation() -> None:
    rubric = Rubric(**_spec(unit="message"))
    assert UNIT_FIELDS["message"] == ("transcript", "message")
    for question in rubric.questions():
        assert "{{ transcript }}" in question.question_text
        assert "{{ message }}" in question.question_text


def test_rubric_text_is_neutralised_before_edsl_sees_it() -> None:
    questions = Rubric(**_spec()).questions()
    # An example's text and a label that look like templates reach EDSL inert.
    assert INERT in questions[0].question_text
    assert "{{ 7*7 }}" not in questions[0].question_text
    assert questions[1].question_options[2] == INERT


def test_answers_come_back_on_the_scale() -> None:
    rubric = Rubric(**_spec())
    assert rubric.dimension("tone").parse(INERT) == "{{ 7*7 }}"
    assert rubric.dimension("tone").parse("calm") == "calm"
    assert rubric.dimension("concession").parse("4") == 4
    assert rubric.dimension("price").parse("12.5") == 12.5
    assert rubric.dimension("mood").parse(-3) == -3.0
    for name, answer in [("tone", "sad"), ("concession", 6), ("concession", 2.5),
                         ("price", 1001), ("mood", "warm"), ("warmth", None)]:  # fmt: skip
        with pytest.raises(ConversationValueError, match=f"dimension '{name}'"):
            rubric.dimension(name).parse(answer)
    with pytest.raises(ConversationValueError, match="no dimension 'size'"):
        rubric.dimension("size")
    assert isinstance(rubric.dimension("mood").scale, IntervalScale)


def test_edsl_asks_the_score_and_its_reason_in_one_answer() -> None:
    """Issue 35: a reason asked in a second call could contradict its score."""
    from edsl import Cache, Model, Scenario, Survey

    rubric = Rubric(**_spec())
    seen: list[str] = []

    def judge(user_prompt: str, system_prompt: str, files: Any) -> str:
        seen.append(user_prompt)
        return "4\nBecause they moved a lot." if "Rate it from 1" in user_prompt else "calm"

    survey = Survey(list(rubric.questions_for("concession")))
    results = (
        survey.by(Scenario({"transcript": "(oldest first, one message per line)\n1. Bob: Fine."}))
        .by(Model("test", func=judge))
        .run(
            cache=Cache(data={}),
            disable_remote_inference=True,
            disable_remote_cache=True,
            progress_bar=False,
            print_exceptions=False,
        )
    )
    assert results.select("concession").to_list() == [4]
    assert results.select("concession_comment").to_list() == ["Because they moved a lot."]
    (score_prompt,) = seen  # one call: the score and its reason
    assert "1. Bob: Fine." in score_prompt and "49 dollars" not in score_prompt


def test_anchors_that_leave_out_an_end_of_a_linear_scale_still_make_a_question() -> None:
    """EDSL refuses option labels without both ends; the anchors stay in the question text."""
    rubric = Rubric(
        name="r",
        dimensions=[{"name": "warmth", "description": "How warm?",
                     "scale": {"kind": "ordinal", "points": 7},
                     "anchors": {1: "hostile", 5: "warm"}}],
    )  # fmt: skip
    score = rubric.questions_for("warmth").score
    assert not score.option_labels and "- 5: warm" in score.question_text
