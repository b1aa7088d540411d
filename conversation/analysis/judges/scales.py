"""The scales a rubric's dimension is scored on (nominal labels, ordinal 1..k or ordered labels,
interval or ratio numbers with bounds), and what rubric models share: their pydantic base (frozen;
errors become ``ConversationValueError`` naming the field), names, labels and anchor keys.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Mapping
from contextvars import ContextVar
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
#: A dimension's reason is its answer's comment: ``<name>_comment`` beside ``<name>`` in a row.
REASON_SUFFIX = "_comment"
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


class RubricModel(BaseModel):
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


def anchor_key(value: Any) -> str:
    """The text form of a level, used as the key of anchors: ``1`` and ``1.0`` are ``"1"``."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a level")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite number")
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    return str(value).strip()


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


# --- scales -------------------------------------------------------------------------------------


class NominalScale(RubricModel):
    """Unordered labels (a codebook's): the judge picks one."""

    kind: Literal["nominal"] = "nominal"
    labels: tuple[Label, ...] = Field(min_length=2, max_length=MAX_LABELS)

    @field_validator("labels")
    @classmethod
    def _distinct(cls, labels: tuple[str, ...]) -> tuple[str, ...]:
        return _check_labels(labels)

    def levels(self) -> list[Any]:
        return list(self.labels)


class OrdinalScale(RubricModel):
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


class IntervalScale(RubricModel):
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


__all__ = [
    "UNIT_FIELDS",
    "IntervalScale",
    "NominalScale",
    "OrdinalScale",
    "RatioScale",
]
