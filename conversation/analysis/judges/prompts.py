"""The EDSL questions a rubric becomes: for each dimension one score question (multiple choice for
labels, linear scale for 1..k, numerical for interval and ratio numbers; anchors and examples in
the text) whose answer carries its reason: the score on the first line, then why, in the same
reply (EDSL's comment). A reason asked in a second call could contradict the score it explained
(score 1 "hostile", reason "friendly and witty").

The prompt describes the transcript as it is given: one numbered line per message, oldest first
(``text.transcript``), the message judged in the same form.

The questions read the unit from the scenario fields in ``rubrics.UNIT_FIELDS``; every piece of
rubric text is neutralised before it enters EDSL (which renders question text as Jinja). Nothing
here runs a model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conversation.analysis.judges.scales import (
    IntervalScale,
    OrdinalScale,
    anchor_key,
)

if TYPE_CHECKING:
    from conversation.analysis.judges.rubrics import Dimension, Rubric
from conversation.text.safety import neutralize


@dataclass(frozen=True, slots=True)
class JudgeQuestions:
    """A dimension's EDSL question, ``score`` (named after the dimension): its answer is the
    score, its comment (``<name>_comment``) the judge's reason, given in the same reply."""

    score: Any

    def __iter__(self) -> Iterator[Any]:
        """The questions to ask: ``Survey(list(rubric.questions_for("tone")))``."""
        return iter((self.score,))


#: How the transcript a judge reads is laid out (``text.transcript.render_transcript``).
TRANSCRIPT_FORM = 'one numbered line per message, oldest first: "N. Speaker: text"'
#: What the judge writes after its score (EDSL reads it as the answer's comment).
REASON_INSTRUCTION = "Then, on the next line, say in one or two sentences why."


def _context(unit: str) -> str:
    if unit == "room":
        return f"The conversation ({TRANSCRIPT_FORM}):\n{{{{ transcript }}}}"
    return (
        f"The conversation before the message ({TRANSCRIPT_FORM}):\n{{{{ transcript }}}}\n\n"
        "The message to judge (in the same form):\n{{ message }}"
    )


def _anchor_lines(dimension: Dimension) -> list[str]:
    levels = dimension.scale.levels()
    if levels:
        return [
            f"- {neutralize(str(level))}"
            + (f": {neutralize(a)}" if (a := dimension.anchors.get(anchor_key(level))) else "")
            for level in levels
        ]
    anchored = sorted(dimension.anchors.items(), key=lambda item: float(item[0]))
    return [f"- {key}: {neutralize(text)}" for key, text in anchored]


def _prompt(rubric: Rubric, dimension: Dimension, instruction: str) -> str:
    lines = [f"You are judging one {rubric.unit} of a conversation.", "", _context(rubric.unit), ""]
    lines.append(f"Rubric: {neutralize(rubric.name)}")
    if rubric.description:
        lines.append(neutralize(rubric.description))
    lines.append(f"Dimension: {dimension.name}. {neutralize(dimension.description)}")
    anchors = _anchor_lines(dimension)
    if anchors:
        lines += ["", "Levels:" if dimension.scale.levels() else "Reference points:", *anchors]
    if dimension.examples:
        lines += ["", "Examples:"]
        for example in dimension.examples:
            why = f" ({neutralize(example.why)})" if example.why else ""
            lines.append(
                f"- {json.dumps(neutralize(example.text), ensure_ascii=False)} -> "
                f"{neutralize(str(example.value))}{why}"
            )
    lines += ["", instruction]
    return "\n".join(lines)


def judge_questions(rubric: Rubric, dimension: Dimension) -> JudgeQuestions:
    from edsl import (
        QuestionLinearScale,
        QuestionMultipleChoice,
        QuestionNumerical,
    )

    scale = dimension.scale
    name = dimension.name
    score: Any
    if isinstance(scale, OrdinalScale) and scale.points:
        levels = scale.levels()
        text = _prompt(
            rubric,
            dimension,
            f"Rate it from 1 (lowest) to {scale.points} (highest). {REASON_INSTRUCTION}",
        )
        option_labels = {
            level: neutralize(dimension.anchors[anchor_key(level)])
            for level in levels
            if anchor_key(level) in dimension.anchors
        }
        if levels[0] not in option_labels or levels[-1] not in option_labels:
            # EDSL refuses labels that leave out an end of the scale; the anchors are in the text
            option_labels = {}
        score = QuestionLinearScale(
            question_name=name,
            question_text=text,
            question_options=levels,
            option_labels=option_labels or None,
            include_comment=True,
        )
    elif isinstance(scale, IntervalScale):
        low = "" if scale.minimum is None else f" from {scale.minimum:g}"
        high = "" if scale.maximum is None else f" to {scale.maximum:g}"
        text = _prompt(
            rubric, dimension, f"Answer with one number{low}{high}. {REASON_INSTRUCTION}"
        )
        score = QuestionNumerical(
            question_name=name,
            question_text=text,
            min_value=scale.minimum,
            max_value=scale.maximum,
            include_comment=True,
        )
    else:
        ordered = " (listed lowest first)" if isinstance(scale, OrdinalScale) else ""
        text = _prompt(
            rubric, dimension, f"Choose the one level that fits best{ordered}. {REASON_INSTRUCTION}"
        )
        score = QuestionMultipleChoice(
            question_name=name,
            question_text=text,
            question_options=[neutralize(str(level)) for level in scale.levels()],
            include_comment=True,
        )
    return JudgeQuestions(score=score)


__all__ = ["REASON_INSTRUCTION", "TRANSCRIPT_FORM", "JudgeQuestions", "judge_questions"]
