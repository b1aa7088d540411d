"""The shape of a question spec at the door (a web form's question), declared once:
``{"type", "name", "text", "options", "min_value", "max_value"}``.

``QuestionSpecIn`` checks each field by its rule (a safe name; a text with plain placeholders of
the allowed variables only, since EDSL renders question text with its own unsandboxed Jinja;
options as neutralised data) and the fields together (options only for multiple choice, bounds
only for numbers, in order). The variables a text may use come in the validation context
(``{"variables": (...)}``). A refusal is a ``ConversationValueError`` naming ``question
<field>`` and the fix.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Sequence
from typing import Annotated, Any

import jinja2
from jinja2 import meta
from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from conversation.exceptions import ConversationValueError
from conversation.text.safety import SafeTemplate, neutralize
from conversation.text.schema import DoorModel, Loc

QUESTION_TYPES = ("yes_no", "free_text", "multiple_choice", "numerical")
TRANSCRIPT_FIELD = "transcript"
ROW_FIELD = "analysis_row"
MAX_QUESTION_CHARS = 4_000
MAX_OPTIONS = 30
MAX_OPTION_CHARS = 200
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_TEMPLATE_PART = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)
_PLACEHOLDER = re.compile(r"\{\{\s*[a-z_][a-z0-9_]*\s*\}\}")
#: Names a question may not take: the columns every row has.
_RESERVED_NAMES = frozenset({"scenario_index", ROW_FIELD})


def _kind(kind: Any) -> str:
    if kind not in QUESTION_TYPES:
        raise ConversationValueError(
            f"question type {kind!r} is not supported; use one of {list(QUESTION_TYPES)}"
        )
    return str(kind)


def _name(name: Any) -> str:
    if (
        not isinstance(name, str)
        or not _NAME.fullmatch(name)
        or keyword.iskeyword(name)
        or name in _RESERVED_NAMES
    ):
        shown = repr(name[:70]) if isinstance(name, str) else type(name).__name__
        raise ConversationValueError(
            f"question name {shown} must be 1-64 lowercase letters, digits and underscores, "
            "starting with a letter, and not a Python keyword or one of "
            f"{sorted(_RESERVED_NAMES)}, e.g. 'deal_reached'"
        )
    return name


class QuestionSpecIn(DoorModel):
    """A question from a form, checked; ``text`` comes out as EDSL will see it (the transcript
    prepended when the text names no variable) and ``options`` neutralised."""

    type: Annotated[Any, AfterValidator(_kind)]
    name: Annotated[Any, AfterValidator(_name)]
    text: Any = Field(default=None, validate_default=True)
    options: Annotated[Any, AfterValidator(lambda v: None if v is None else _options(v))] = None
    min_value: Annotated[Any, AfterValidator(lambda v: _bound(v, "min_value"))] = None
    max_value: Annotated[Any, AfterValidator(lambda v: _bound(v, "max_value"))] = None

    @field_validator("text", mode="after")
    @classmethod
    def _text(cls, text: Any, info: ValidationInfo) -> str:
        variables = (info.context or {}).get("variables", (TRANSCRIPT_FIELD,))
        return _question_text(text, variables)

    @model_validator(mode="after")
    def _fits_type(self) -> QuestionSpecIn:
        if self.type == "multiple_choice":
            if self.options is None:
                _options(None)
            return self
        for field in ("options", "min_value", "max_value"):
            if getattr(self, field) is not None and not (
                self.type == "numerical" and field != "options"
            ):
                raise ConversationValueError(
                    f"question field {field!r} does not apply to type {self.type!r}; remove it"
                )
        low, high = self.min_value, self.max_value
        if low is not None and high is not None and low >= high:
            raise ConversationValueError(
                f"question min_value ({low}) must be below max_value ({high}); swap or widen them"
            )
        return self


def question_place(loc: Loc) -> str:
    """``("options", 1)`` -> ``question options[1]``; ``()`` -> ``question spec``."""
    if not loc:
        return "question spec"
    return "question " + "".join(
        f"[{part}]" if isinstance(part, int) else f"{'.' if i else ''}{part}"
        for i, part in enumerate(loc)
    )


def _question_text(text: Any, variables: Sequence[str]) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ConversationValueError(
            f"question text must be non-empty text, got {text!r}; e.g. 'Was a deal reached?'"
        )
    if len(text) > MAX_QUESTION_CHARS:
        raise ConversationValueError(
            f"question text is {len(text)} characters; the limit is {MAX_QUESTION_CHARS}"
        )
    SafeTemplate(text, allowed=variables, field="question text")  # syntax and variable names
    # EDSL renders question text with its own, unsandboxed Jinja: allow plain placeholders only.
    for match in _TEMPLATE_PART.finditer(text):
        if not _PLACEHOLDER.fullmatch(match.group(0)):
            raise ConversationValueError(
                f"question text may only use plain placeholders such as {{{{ transcript }}}}; "
                f"{match.group(0)[:60]!r} is not allowed"
            )
    used = variables_used(text)
    if not used & set(variables) and TRANSCRIPT_FIELD in variables:
        text = f"Transcript:\n{{{{ {TRANSCRIPT_FIELD} }}}}\n\n{text.strip()}"
    return text.strip()


def _shown(value: Any) -> str:
    """A bad value for an error message: text clipped, anything else by its type (the repr of a
    hostile value can be huge or nested past the recursion limit)."""
    if isinstance(value, str):
        return repr(value[:80])
    if isinstance(value, list | tuple):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__


def _options(options: Any) -> list[str]:
    if not isinstance(options, list | tuple) or not 2 <= len(options) <= MAX_OPTIONS:
        raise ConversationValueError(
            f"question options must be a list of 2 to {MAX_OPTIONS} choices, got {_shown(options)}"
        )
    cleaned: list[str] = []
    for index, option in enumerate(options):
        if not isinstance(option, str) or not option.strip() or len(option) > MAX_OPTION_CHARS:
            raise ConversationValueError(
                f"question options[{index}] must be non-empty text of at most "
                f"{MAX_OPTION_CHARS} characters, got {_shown(option)}"
            )
        cleaned.append(neutralize(option.strip()))
    duplicates = sorted({o for o in cleaned if cleaned.count(o) > 1})
    if duplicates:
        raise ConversationValueError(
            f"question options must be distinct; {duplicates} appear more than once"
        )
    return cleaned


def _bound(value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConversationValueError(f"question {field} must be a finite number, got {value!r}")
    return value


def variables_used(text: str) -> set[str]:
    try:
        return set(meta.find_undeclared_variables(jinja2.Environment().parse(text)))
    except jinja2.TemplateSyntaxError as exc:
        raise ConversationValueError(
            f"question text is not a valid template ({exc.message}); check the {{{{ }}}} pairs"
        ) from exc


__all__ = [
    "MAX_OPTIONS",
    "MAX_OPTION_CHARS",
    "MAX_QUESTION_CHARS",
    "QUESTION_TYPES",
    "ROW_FIELD",
    "TRANSCRIPT_FIELD",
    "QuestionSpecIn",
    "question_place",
    "variables_used",
]
