"""Rubrics: what a judge (a person or a model) scores a unit on, and the EDSL questions that ask it.

A :class:`Rubric` has a name, the unit it scores (a ``message`` or a whole ``room``) and named
dimensions. Each :class:`Dimension` has a scale (nominal labels, ordinal 1..k or ordered labels,
interval or ratio numbers with bounds), anchors (what a level means) and examples (a unit with
the value it deserves). The models are pydantic v2, frozen; bad input raises
``ConversationValueError`` naming the field (``dimensions[0].scale.points: ...``).

A rubric's ``version`` is a hash of its content: any edit makes a new version, so scores stored
with a version keep meaning what they meant. Each dimension has its own ``version`` too, so after
an edit only the dimensions that changed need re-scoring.

``rubric.questions()`` builds, for each dimension, the EDSL question it becomes (the score, and
the reason in the same answer: ``judges.prompts``); they read the unit from the scenario fields
in :data:`UNIT_FIELDS`.

    rubric = Rubric.from_codebook("tags v1", ["concession", "threat", "question"])
    rubric.version, [q.question_name for q in rubric.questions()]
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from conversation.analysis.judges.scales import (
    MAX_DIMENSIONS,
    MAX_EXAMPLES,
    REASON_SUFFIX,
    UNIT_FIELDS,
    IntervalScale,
    Name,
    NominalScale,
    OrdinalScale,
    RatioScale,
    RubricModel,
    Scale,
    Text,
    Unit,
    anchor_key,
    as_number,
)
from conversation.exceptions import ConversationValueError
from conversation.text.safety import neutralize

if TYPE_CHECKING:
    from conversation.analysis.judges.prompts import JudgeQuestions

# --- dimensions and rubrics ---------------------------------------------------------------------


class Example(RubricModel):
    """A unit (its text) and the value it deserves, with why."""

    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
    value: str | int | float
    why: Text = ""


class Dimension(RubricModel):
    """One thing judged: ``name`` (lowercase, it names the question), ``description`` (what to
    judge, e.g. "How much does the speaker concede?"), a ``scale``, ``anchors`` (level -> what it
    means; keys are levels, ``"1"`` or ``1`` alike) and ``examples``."""

    name: Name
    description: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)
    ]
    scale: Scale
    anchors: dict[str, Text] = Field(default_factory=dict)
    examples: tuple[Example, ...] = Field(default=(), max_length=MAX_EXAMPLES)

    @field_validator("anchors", mode="before")
    @classmethod
    def _anchor_keys(cls, anchors: Any) -> Any:
        if isinstance(anchors, Mapping):
            return {anchor_key(k): v for k, v in anchors.items()}
        return anchors

    @model_validator(mode="after")
    def _on_the_scale(self) -> Dimension:
        for key in self.anchors:
            if not self.contains(key):
                raise ValueError(f"anchors: {key!r} is not a level of the scale ({self._range()})")
        for index, example in enumerate(self.examples):
            if not self.contains(example.value):
                raise ValueError(
                    f"examples[{index}].value {example.value!r} is not on the scale "
                    f"({self._range()})"
                )
        return self

    def _range(self) -> str:
        scale = self.scale
        if isinstance(scale, IntervalScale):
            low = "-inf" if scale.minimum is None else f"{scale.minimum:g}"
            high = "inf" if scale.maximum is None else f"{scale.maximum:g}"
            return f"numbers from {low} to {high}"
        return "levels " + ", ".join(str(v) for v in scale.levels())

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is a level (labels, 1..k) or a number within the bounds."""
        scale = self.scale
        if isinstance(scale, IntervalScale):
            number = as_number(value)
            if number is None or not math.isfinite(number):
                return False
            return (scale.minimum is None or number >= scale.minimum) and (
                scale.maximum is None or number <= scale.maximum
            )
        try:
            key = anchor_key(value)
        except ValueError:
            return False
        return key in {anchor_key(level) for level in scale.levels()}

    @property
    def level(self) -> str:
        """The level of measurement (for ``agreement``): nominal, ordinal, interval or ratio."""
        return self.scale.kind

    def bounds(self) -> tuple[float | None, float | None]:
        """The lowest and highest value a score can take (1..k for ordinal points, an interval
        or ratio scale's bounds; None where there is none): what an interval of a mean is
        bounded by, and a chart's axis."""
        scale = self.scale
        if isinstance(scale, OrdinalScale) and scale.points:
            return 1.0, float(scale.points)
        if isinstance(scale, IntervalScale):
            return scale.minimum, scale.maximum
        return None, None

    def order(self) -> list[Any] | None:
        """The levels lowest first for ordered labels (``agreement``'s ``order=``), else None."""
        if isinstance(self.scale, OrdinalScale) and self.scale.labels:
            return list(self.scale.labels)
        return None

    def version(self, unit: Unit) -> str:
        """A hash of this dimension and the unit it scores (what its questions depend on)."""
        return _digest({"unit": unit, "dimension": self.model_dump(mode="json")})

    def parse(self, answer: Any) -> Any:
        """A judge's answer as a value on the scale: the label as written in the rubric (EDSL
        returns the neutralised text), an int for 1..k, a float for numbers. An answer off the
        scale raises ``ConversationValueError``."""
        scale = self.scale
        if isinstance(scale, IntervalScale):
            number = as_number(answer)
            if number is not None and self.contains(number):
                return number
        elif isinstance(scale, OrdinalScale) and scale.points:
            number = as_number(answer)
            if number is not None and number.is_integer() and self.contains(number):
                return int(number)
        else:
            shown = {neutralize(label): label for label in scale.levels()}
            if isinstance(answer, str) and answer.strip() in shown:
                return shown[answer.strip()]
        raise ConversationValueError(
            f"dimension {self.name!r}: the answer {str(answer)[:80]!r} is not on its scale "
            f"({self._range()})"
        )


class Rubric(RubricModel):
    """Named dimensions judged on one kind of unit (a ``message`` or a whole ``room``)."""

    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]
    unit: Unit = "message"
    description: Text = ""
    dimensions: tuple[Dimension, ...] = Field(min_length=1, max_length=MAX_DIMENSIONS)

    @field_validator("dimensions")
    @classmethod
    def _distinct_names(cls, dimensions: tuple[Dimension, ...]) -> tuple[Dimension, ...]:
        names = [d.name for d in dimensions]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"dimension names must be distinct; {twice} appear more than once")
        clash = sorted(n for n in names if n.endswith(REASON_SUFFIX) and n[: -len(REASON_SUFFIX)] in names)  # fmt: skip
        if clash:
            raise ValueError(
                f"{clash} would share a name with the reason (the comment) of "
                f"{[n[: -len(REASON_SUFFIX)] for n in clash]}; rename them"
            )
        return dimensions

    @classmethod
    def from_dict(cls, data: Any) -> Rubric:
        """A rubric from :meth:`to_dict`'s shape (checked; errors name the field)."""
        if not isinstance(data, Mapping):
            raise ConversationValueError(f"a rubric must be a dict, not {type(data).__name__}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``from_dict`` gives the same rubric (and version) back."""
        return self.model_dump(mode="json")

    @property
    def version(self) -> str:
        """16 hex digits of the SHA-256 of the rubric's content: any edit makes a new one."""
        return _digest(self.to_dict())

    def dimension(self, name: str) -> Dimension:
        for dimension in self.dimensions:
            if dimension.name == name:
                return dimension
        raise ConversationValueError(
            f"rubric {self.name!r} has no dimension {name!r}; it has "
            f"{[d.name for d in self.dimensions]}"
        )

    @classmethod
    def from_codebook(
        cls,
        name: str,
        labels: Sequence[str] | Mapping[str, str | None],
        *,
        unit: Unit = "message",
        dimension: str = "code",
        description: str | None = None,
        none_label: str | None = None,
    ) -> Rubric:
        """One nominal dimension over a codebook's labels (``coding.codebook(db, ...)``), so
        human tags and judge scores share labels and units. ``labels`` may map each label to
        its description (the anchor). ``none_label`` adds a label for units no code fits
        (coders leave such messages untagged; a judge must say so)."""
        if isinstance(labels, str) or not isinstance(labels, Sequence | Mapping):
            raise ConversationValueError(
                f"labels must be the codebook's list of labels, not {labels!r}"
            )
        names = list(labels)
        anchors = {k: v for k, v in labels.items() if v} if isinstance(labels, Mapping) else {}
        if none_label is not None:
            names.append(none_label)
            anchors[none_label] = "none of the other codes fits"
        text = description or f"Which code of the codebook fits this {unit} best?"
        return cls.from_dict(
            {
                "name": name,
                "unit": unit,
                "dimensions": [
                    {"name": dimension, "description": text,
                     "scale": {"kind": "nominal", "labels": names}, "anchors": anchors},
                ],
            }
        )  # fmt: skip

    # --- EDSL questions -------------------------------------------------------------------------

    def questions_for(self, name: str) -> JudgeQuestions:
        """The question of one dimension (its answer the score, its comment the reason)."""
        from conversation.analysis.judges.prompts import judge_questions

        return judge_questions(self, self.dimension(name))

    def questions(self) -> list[Any]:
        """Every dimension's question, in rubric order (an EDSL ``Survey(rubric.questions())``
        asks them; scenarios need :data:`UNIT_FIELDS`)."""
        from conversation.analysis.judges.prompts import judge_questions

        return [judge_questions(self, dimension).score for dimension in self.dimensions]


def _digest(data: Any) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


__all__ = [
    "UNIT_FIELDS",
    "IntervalScale",
    "NominalScale",
    "OrdinalScale",
    "RatioScale",
    "Dimension",
    "Example",
    "Rubric",
]
