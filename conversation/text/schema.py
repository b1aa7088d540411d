"""The schemas at the door: the base of every declarative input model, and pydantic's errors
translated into the project's typed ones.

Untrusted input (an import, a model spec, a room config, an experiment design, a question spec)
is described by a pydantic model built on :class:`DoorModel` (strict types, unknown fields
refused by name) and checked once, by :func:`validated`, where it enters; the code behind the
door receives checked data. Each concept keeps its schema beside its handler
(``rooms/transfer/schema.py``, ``models/spec_schema.py``, ``experiments/design_schema.py``,
``analysis/question_schema.py``): this module only holds what they share.

Sizes are not pydantic's job: every caller measures its input first (``text.limits``), so a
50 MB value or a value nested 100,000 deep never reaches a model.

Errors: the first of pydantic's errors becomes ``error`` (``ConversationValueError`` or a
subclass) whose message starts with the field, named by the caller's ``place(loc)``, and ends
with the fix. A validator states a problem with :class:`Problem` (a phrase that follows the
field's name: ``"must be text"``); a ``ConversationValueError`` raised inside (a nested config,
say) keeps its own message, after the field's name (as it is, from a validator of the whole
model, which names the fields itself).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from conversation.exceptions import ConversationValueError
from conversation.text.limits import text_problem

Loc = tuple[int | str, ...]
T = TypeVar("T")


class Problem(ValueError):
    """What is wrong with a field, as a phrase that follows its name (``"must be text"``)."""


class DoorModel(BaseModel):
    """Strict, frozen input: no coercion (``"1"`` is not 1, ``True`` is not 1), and unknown
    fields refused together, by name, with the allowed ones listed."""

    model_config = ConfigDict(strict=True, frozen=True, populate_by_name=True, allow_inf_nan=False)
    #: What the message calls an unknown name: ``has unknown field(s) [...]`` (or ``key(s)``).
    unknown_noun: ClassVar[str] = "field"
    #: True for a shape whose other fields are checked elsewhere (a template's room options).
    open_fields: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and not cls.open_fields:
            allowed = {f.alias or name for name, f in cls.model_fields.items()}
            unknown = sorted(str(k) for k in data if k not in allowed)
            if unknown:
                raise Problem(
                    f"has unknown {cls.unknown_noun}(s) {unknown}; allowed: {sorted(allowed)}"
                )
        return data


def default_place(loc: Loc, root: str = "") -> str:
    """``("events", 3, "content")`` -> ``events[3].content`` (after ``root`` when given)."""
    text = root
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the input"


def validated(
    schema: type[T] | TypeAdapter[T],
    data: Any,
    *,
    error: type[ConversationValueError] = ConversationValueError,
    place: Callable[[Loc], str] = default_place,
    context: Mapping[str, Any] | None = None,
) -> T:
    """``data`` checked by ``schema`` (a ``DoorModel`` class or a ``TypeAdapter``), or ``error``
    naming the first bad field (``place(loc)``) and the fix."""
    try:
        if isinstance(schema, TypeAdapter):
            return schema.validate_python(data, context=context)
        return schema.model_validate(data, context=context)  # type: ignore[attr-defined,no-any-return]
    except ValidationError as exc:
        raise door_error(exc, error=error, place=place) from None


def door_error(
    exc: ValidationError,
    *,
    error: type[ConversationValueError] = ConversationValueError,
    place: Callable[[Loc], str] = default_place,
) -> ConversationValueError:
    """The typed error for pydantic's first error: the field's name, then what is wrong."""
    first = exc.errors(include_url=False)[0]
    loc = tuple(part for part in first["loc"] if not _is_branch(part))
    where = place(loc)
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, Problem):
        return error(f"{where} {cause}")
    if isinstance(cause, ConversationValueError):
        text = str(cause)  # a validator of the whole model names the fields itself
        return error(text if not loc or text.startswith(where) else f"{where}: {text}")
    return error(f"{where} {_phrase(first)}")


def _is_branch(part: Any) -> bool:
    """Pydantic names the branch of a union or a function validator in ``loc``: not a field."""
    return isinstance(part, str) and (
        part.startswith(("function-", "union[", "nullable[", "tagged-union["))
        or part in ("str", "int", "float", "bool", "list[any]", "dict[str,any]", "none")
    )


_PHRASES = {
    "missing": "is required",
    "string_type": "must be text",
    "int_type": "must be a whole number",
    "bool_type": "must be true or false",
    "float_type": "must be a number",
    "finite_number": "must be a finite number",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
}


def _phrase(detail: Mapping[str, Any]) -> str:
    kind, ctx = detail["type"], detail.get("ctx") or {}
    got = _clip(detail.get("input"))
    if kind in _PHRASES:
        return _PHRASES[kind] + ("" if kind == "missing" else f", got {got}")
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {got}"
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<="}
    if kind in bounds:
        limit = next(iter(ctx.values()), "")
        return f"must be {bounds[kind]} {limit}, got {got}"
    if kind in ("too_long", "too_short"):
        return f"must hold {ctx.get('min_length', 0)} to {ctx.get('max_length', '')} items"
    return f"is not valid ({detail.get('msg', kind)}), got {got}"


def _clip(value: Any) -> str:
    """A bad value for a message: text clipped, containers by their size (a hostile value's
    repr can be huge or nested past the recursion limit)."""
    if isinstance(value, str):
        return repr(value[:60]) + ("..." if len(value) > 60 else "")
    if isinstance(value, Mapping | list | tuple | set):
        return f"a {type(value).__name__} of {len(value)}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def text_rule(
    limit: int, *, empty: bool = False, one_line: bool = False, optional: bool = False
) -> AfterValidator:
    """A field under ``text.limits``' text rule (``text_problem``), as a pydantic validator;
    ``optional``: None passes too."""

    def check(value: Any) -> Any:
        if optional and value is None:
            return value
        problem = text_problem(value, limit, empty=empty, one_line=one_line)
        if problem is not None:
            raise Problem(problem)
        return value

    return AfterValidator(check)


__all__ = [
    "DoorModel",
    "Loc",
    "Problem",
    "default_place",
    "door_error",
    "text_rule",
    "validated",
]
