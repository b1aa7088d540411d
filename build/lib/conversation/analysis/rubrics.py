"""Rubrics: what a judge (a person or a model) scores a unit on, and the EDSL questions that ask it.

A :class:`Rubric` has a name, the unit it scores (a ``message`` or a whole ``room``) and named
dimensions. Each :class:`Dimension` has a scale (nominal labels, ordinal 1..k or ordered labels,
interval or ratio numbers with bounds), anchors (what a level means) and examples (a unit with
the value it deserves). The models are pydantic v2, frozen; bad input raises
``ConversationValueError`` naming the field (``dimensions[0].scale.points: ...``).

A rubric's ``version`` is a hash of its content: any edit makes a new version, so scores stored
with a version keep meaning what they meant. Each dimension has its own ``version`` too, so after
an edit only the dimensions that changed need re-scoring.

``rubric.questions()`` builds, for each dimension, the EDSL question it becomes (multiple choice
for labels, linear scale for 1..k, numerical for interval and ratio; anchors in the text) and a
short free-text reason question that pipes the score in. Nothing here runs a model. The questions
read the unit from the scenario fields in :data:`UNIT_FIELDS`; every piece of rubric text is
neutralised before it enters EDSL (which renders question text as Jinja).

    rubric = Rubric.from_codebook("tags v1", ["concession", "threat", "question"])
    rubric.version, [q.question_name for q in rubric.questions()]
"""

from __future__ import annotations

import hashlib
import json
import keyword
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from conversation.exceptions import ConversationValueError
from conversation.text.safety import neutralize

Unit = Literal["message", "room"]
#: The scenario fields each unit's questions read: a room's transcript (JSON lines); for a
#: message, the conversation up to it and the message itself.
UNIT_FIELDS: dict[str, tuple[str, ...]] = {
    "room": ("transcript",),
    "message": ("transcript", "message"),
}
MAX_DIMENSIONS = 20
MAX_LABELS = 30
MAX_POINTS = 11
MAX_EXAMPLES = 10
REASON_SUFFIX = "_reason"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _name(value: str) -> str:
    if not _NAME.fullmatch(value) or keyword.iskeyword(value):
        raise ValueError(
            "a dimension name is 1-40 lowercase letters, digits and underscores, starting with a "
            "letter and not a Python keyword (it names the EDSL question), e.g. 'concession'"
        )
    return value


Name = Annotated[str, AfterValidator(_name)]
Label = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=80)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000)]


#: True while a model is being validated: pydantic calls a nested model's ``__init__`` too, and
#: only the outermost call may translate the error (so the field path stays whole).
_VALIDATING: ContextVar[bool] = ContextVar("rubric_validating", default=False)


class _Model(BaseModel):
    """Frozen, strict about unknown fields, and raising the project's error naming the field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **data: Any) -> None:
        if _VALIDATING.get():
            super().__init__(**data)
            return
        token = _VALIDATING.set(True)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _translate(exc, type(self).__name__.lower()) from None
        finally:
            _VALIDATING.reset(token)


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("nominal", "ordinal", "interval", "ratio") and out.endswith("scale"):
            continue  # the union's tag pydantic adds: the user wrote `scale`, not `scale.ordinal`
        else:
            out += f".{part}" if out else str(part)
    return out


def _translate(exc: ValidationError, what: str) -> ConversationValueError:
    errors = exc.errors(include_url=False)
    locs = [tuple(e["loc"]) for e in errors]
    problems = []
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] == "too_short" and any(
            len(other) > len(loc) and other[: len(loc)] == loc for other in locs
        ):
            continue  # "no items" only because its items failed: their errors say why
        message = str(error["msg"]).removeprefix("Value error, ")
        shown = error.get("input")
        got = "" if isinstance(shown, Mapping | BaseModel) else f" (got {repr(shown)[:80]})"
        problems.append(f"{what} {_where(loc) or 'input'}: {message}{got}")
    return ConversationValueError("; ".join(problems))


def _label_text(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("a label may not hold control characters (newlines, tabs)")
    return value


def _check_labels(labels: tuple[str, ...]) -> tuple[str, ...]:
    for label in labels:
        _label_text(label)
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ValueError(f"labels must be distinct; {twice} appear more than once")
    return labels


def _key(value: Any) -> str:
    """The text form of a level, used as the key of anchors: ``1`` and ``1.0`` are ``"1"``."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a level")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite number")
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    return str(value).strip()


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


# --- scales -------------------------------------------------------------------------------------


class NominalScale(_Model):
    """Unordered labels (a codebook's): the judge picks one."""

    kind: Literal["nominal"] = "nominal"
    labels: tuple[Label, ...] = Field(min_length=2, max_length=MAX_LABELS)

    @field_validator("labels")
    @classmethod
    def _distinct(cls, labels: tuple[str, ...]) -> tuple[str, ...]:
        return _check_labels(labels)

    def levels(self) -> list[Any]:
        return list(self.labels)


class OrdinalScale(_Model):
    """Ordered levels: the whole numbers 1..``points``, or ``labels`` lowest first."""

    kind: Literal["ordinal"] = "ordinal"
    points: int | None = Field(default=None, ge=2, le=MAX_POINTS)
    labels: tuple[Label, ...] | None = Field(default=None, min_length=2, max_length=MAX_LABELS)

    @model_validator(mode="after")
    def _one_form(self) -> OrdinalScale:
        if (self.points is None) == (self.labels is None):
            raise ValueError(
                "an ordinal scale takes points=k (levels 1..k) or labels=[...] (lowest first), "
                "one of the two"
            )
        if self.labels is not None:
            _check_labels(self.labels)
        return self

    def levels(self) -> list[Any]:
        return list(range(1, self.points + 1)) if self.points else list(self.labels or ())


class IntervalScale(_Model):
    """Numbers whose differences mean something (no true zero), optionally bounded."""

    kind: Literal["interval"] = "interval"
    minimum: float | None = None
    maximum: float | None = None

    @model_validator(mode="after")
    def _bounds(self) -> IntervalScale:
        for name in ("minimum", "maximum"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number")
        if self.minimum is not None and self.maximum is not None and self.minimum >= self.maximum:
            raise ValueError(f"minimum ({self.minimum:g}) must be below maximum ({self.maximum:g})")
        return self

    def levels(self) -> list[Any]:
        return []


class RatioScale(IntervalScale):
    """Numbers with a true zero (counts, amounts): ``minimum`` is 0 or more."""

    kind: Literal["ratio"] = "ratio"  # type: ignore[assignment]
    minimum: float = Field(default=0.0, ge=0)  # type: ignore[assignment]


Scale = Annotated[
    NominalScale | OrdinalScale | IntervalScale | RatioScale, Field(discriminator="kind")
]


# --- dimensions and rubrics ---------------------------------------------------------------------


class Example(_Model):
    """A unit (its text) and the value it deserves, with why."""

    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
    value: str | int | float
    why: Text = ""


class Dimension(_Model):
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
            return {_key(k): v for k, v in anchors.items()}
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
            number = _number(value)
            if number is None or not math.isfinite(number):
                return False
            return (scale.minimum is None or number >= scale.minimum) and (
                scale.maximum is None or number <= scale.maximum
            )
        try:
            key = _key(value)
        except ValueError:
            return False
        return key in {_key(level) for level in scale.levels()}

    @property
    def level(self) -> str:
        """The level of measurement (for ``agreement``): nominal, ordinal, interval or ratio."""
        return self.scale.kind

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
            number = _number(answer)
            if number is not None and self.contains(number):
                return number
        elif isinstance(scale, OrdinalScale) and scale.points:
            number = _number(answer)
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


class Rubric(_Model):
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
                f"{clash} would share a question name with the reason question of "
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
        """The score question and the reason question of one dimension."""
        return _questions(self, self.dimension(name))

    def questions(self) -> list[Any]:
        """Every dimension's score question then its reason question, in rubric order (an EDSL
        ``Survey(rubric.questions())`` asks them; scenarios need :data:`UNIT_FIELDS`)."""
        out: list[Any] = []
        for dimension in self.dimensions:
            pair = _questions(self, dimension)
            out += [pair.score, pair.reason]
        return out


def _digest(data: Any) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class JudgeQuestions:
    """A dimension's EDSL questions: ``score`` (named after the dimension) and ``reason``
    (``<name>_reason``, free text, the score piped in)."""

    score: Any
    reason: Any

    def __iter__(self) -> Iterator[Any]:
        """``score`` then ``reason``: ``Survey(list(rubric.questions_for("tone")))``."""
        return iter((self.score, self.reason))


def _context(unit: str) -> str:
    if unit == "room":
        return "The conversation (one JSON record per message):\n{{ transcript }}"
    return (
        "The conversation so far (one JSON record per message):\n{{ transcript }}\n\n"
        "The message to judge:\n{{ message }}"
    )


def _anchor_lines(dimension: Dimension) -> list[str]:
    levels = dimension.scale.levels()
    if levels:
        return [
            f"- {neutralize(str(level))}"
            + (f": {neutralize(a)}" if (a := dimension.anchors.get(_key(level))) else "")
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


def _questions(rubric: Rubric, dimension: Dimension) -> JudgeQuestions:
    from edsl import (
        QuestionFreeText,
        QuestionLinearScale,
        QuestionMultipleChoice,
        QuestionNumerical,
    )

    scale = dimension.scale
    name = dimension.name
    score: Any
    if isinstance(scale, OrdinalScale) and scale.points:
        levels = scale.levels()
        text = _prompt(rubric, dimension, f"Rate it from 1 (lowest) to {scale.points} (highest).")
        option_labels = {
            level: neutralize(dimension.anchors[_key(level)])
            for level in levels
            if _key(level) in dimension.anchors
        }
        if levels[0] not in option_labels or levels[-1] not in option_labels:
            # EDSL refuses labels that leave out an end of the scale; the anchors are in the text
            option_labels = {}
        score = QuestionLinearScale(
            question_name=name,
            question_text=text,
            question_options=levels,
            option_labels=option_labels or None,
            include_comment=False,
        )
    elif isinstance(scale, IntervalScale):
        low = "" if scale.minimum is None else f" from {scale.minimum:g}"
        high = "" if scale.maximum is None else f" to {scale.maximum:g}"
        text = _prompt(rubric, dimension, f"Answer with one number{low}{high}.")
        score = QuestionNumerical(
            question_name=name,
            question_text=text,
            min_value=scale.minimum,
            max_value=scale.maximum,
            include_comment=False,
        )
    else:
        ordered = " (listed lowest first)" if isinstance(scale, OrdinalScale) else ""
        text = _prompt(rubric, dimension, f"Choose the one level that fits best{ordered}.")
        score = QuestionMultipleChoice(
            question_name=name,
            question_text=text,
            question_options=[neutralize(str(level)) for level in scale.levels()],
            include_comment=False,
        )
    reason = QuestionFreeText(
        question_name=f"{name}{REASON_SUFFIX}",
        question_text=(
            f"{_context(rubric.unit)}\n\nYou judged this {rubric.unit} on "
            f"{dimension.name} ({neutralize(dimension.description)}) and answered "
            f"{{{{ {name}.answer }}}}. In one or two sentences, why?"
        ),
    )
    return JudgeQuestions(score=score, reason=reason)


__all__ = [
    "UNIT_FIELDS",
    "Dimension",
    "Example",
    "IntervalScale",
    "JudgeQuestions",
    "NominalScale",
    "OrdinalScale",
    "RatioScale",
    "Rubric",
]
