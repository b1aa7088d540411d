"""Keeping untrusted text away from template engines (DESIGN decision 5).

Two tools:

- ``neutralize(text)`` makes user or model text inert before it enters an EDSL object (a Scenario,
  an Agent's traits, a Question's text). EDSL renders such text as Jinja, repeatedly, until it stops
  changing, so ``{{ 7*7 }}`` would become ``49``. A zero-width space is put between ``{`` and the
  next ``{``, ``%`` or ``#``: the text reads the same to a person or a model, but no Jinja delimiter
  is left. The database always keeps the original text.
- ``SafeTemplate`` renders a template a user wrote on purpose (the per-round message, a room's prompt)
  in a sandboxed, immutable Jinja environment: only whitelisted variables, no attribute tricks, no
  macros, imports or deep loops, arithmetic bounded in size, and output bounded in length and time.
  Problems are reported as ``ConversationValueError`` naming the template and the fix.

Prompts the engine sends straight to a model (``model.async_get_response``) are plain strings that
no template engine sees, so they carry the literal text.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from conversation.exceptions import ConversationValueError

ZERO_WIDTH_SPACE = "\u200b"
_OPENER = re.compile(r"\{(?=[{%#])")

MAX_TEMPLATE_CHARS = 20_000
MAX_OUTPUT_CHARS = 20_000
MAX_RENDER_SECONDS = 0.5
"""CPU seconds of the rendering thread (``time.thread_time``), not wall-clock time: a loaded
machine (other processes, other threads holding the GIL) must never make a template fail."""
MAX_RANGE = 1_000
#: The only variables a template may loop over (lists of bounded size). Any other variable is
#: text: looping over its characters does no prompt any good and, nested, would cost millions of
#: steps with no output to notice it by.
LOOPABLE_VARIABLES = frozenset({"agent_names"})
MAX_LOOP_DEPTH = 2
_MAX_POWER_RESULT_BITS = 256
_BANNED_NODES = (
    nodes.Macro,
    nodes.CallBlock,
    nodes.Import,
    nodes.FromImport,
    nodes.Include,
    nodes.Extends,
    nodes.Block,
)


def neutralize(text: str) -> str:
    """Return ``text`` with every Jinja opener (``{{``, ``{%``, ``{#``) broken by a zero-width space.

    Idempotent, and a no-op on text without delimiters.
    """
    if "{" not in text:
        return text
    return _OPENER.sub("{" + ZERO_WIDTH_SPACE, text)


def neutralize_value(value: Any) -> Any:
    """``neutralize`` applied to every string inside lists, tuples and dict values (keys too)."""
    if isinstance(value, str):
        return neutralize(value)
    if isinstance(value, Mapping):
        return {neutralize_value(k): neutralize_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(neutralize_value(v) for v in value)
    return value


def _safe_range(*args: int) -> range:
    result = range(*args)
    if len(result) > MAX_RANGE:
        raise SecurityError(f"range() is limited to {MAX_RANGE} items in templates")
    return result


class _BoundedEnvironment(ImmutableSandboxedEnvironment):
    """A sandbox whose ``**`` and ``*`` cannot build huge numbers or strings."""

    intercepted_binops = frozenset({"**", "*"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**":
            if not isinstance(left, int | float) or not isinstance(right, int | float):
                raise SecurityError("** works on numbers only in templates")
            if isinstance(left, int) and isinstance(right, int) and abs(left) > 1:
                if right < 0 or right * max(abs(left).bit_length(), 1) > _MAX_POWER_RESULT_BITS:
                    raise SecurityError(f"{left} ** {right} is too large for a template")
            elif abs(right) > 1_000:
                raise SecurityError(f"{left} ** {right} is too large for a template")
            return left**right
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                if (
                    isinstance(seq, str | list | tuple)
                    and isinstance(times, int)
                    and len(seq) * max(times, 0) > MAX_OUTPUT_CHARS
                ):
                    raise SecurityError("repetition in a template is limited in size")
        return super().call_binop(context, operator, left, right)


def _environment() -> _BoundedEnvironment:
    env = _BoundedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False)
    env.globals = {"range": _safe_range}
    return env


@functools.lru_cache(maxsize=256)
def compiled_template(source: str, allowed: tuple[str, ...], field: str) -> SafeTemplate:
    """A ``SafeTemplate``, compiled once per (source, variables, field) and then shared: templates
    are immutable, and compiling one costs far more than rendering it."""
    return SafeTemplate(source, allowed=allowed, field=field)


def _bounded_iterable(node: nodes.Node) -> bool:
    """Whether a loop's iterable is known to be small: a list variable, a literal, a range()."""
    if isinstance(node, nodes.Name):
        return node.name in LOOPABLE_VARIABLES
    if isinstance(node, nodes.List | nodes.Tuple):
        return True
    if isinstance(node, nodes.Call):
        return isinstance(node.node, nodes.Name) and node.node.name == "range"
    if isinstance(node, nodes.Filter):  # e.g. agent_names | reverse, | sort
        return (
            node.name in ("reverse", "sort", "unique")
            and node.node is not None
            and (_bounded_iterable(node.node))
        )
    return False


class SafeTemplate:
    """A user-written template, checked once and rendered safely many times.

    ``allowed`` names the variables the template may use; anything else is rejected when the
    template is created, with the list of what is available.
    """

    def __init__(self, source: str, *, allowed: Iterable[str], field: str = "template") -> None:
        if not isinstance(source, str):
            raise ConversationValueError(
                f"{field} must be a string, got {type(source).__name__}; pass the template text"
            )
        if len(source) > MAX_TEMPLATE_CHARS:
            raise ConversationValueError(
                f"{field} is {len(source)} characters; the limit is {MAX_TEMPLATE_CHARS}"
            )
        self.source = source
        self.field = field
        self.allowed = frozenset(allowed)
        self._env = _environment()
        try:
            tree = self._env.parse(source)
        except jinja2.TemplateSyntaxError as exc:
            raise ConversationValueError(
                f"{field} is not a valid template (line {exc.lineno}: {exc.message}); "
                "check the {{ }} and {% %} pairs"
            ) from exc
        self._check_tree(tree)
        unknown = meta.find_undeclared_variables(tree) - self.allowed - {"range"}
        if unknown:
            raise ConversationValueError(
                f"{field} uses unknown variable(s) {sorted(unknown)}; "
                f"available: {sorted(self.allowed)}"
            )
        self._template = self._env.from_string(tree)

    def _check_tree(self, tree: nodes.Template) -> None:
        for node in tree.find_all(_BANNED_NODES):
            raise ConversationValueError(
                f"{self.field} may not use {type(node).__name__.lower()} blocks; "
                "use plain {{ variables }}, {% if %} and simple {% for %} loops"
            )

        for loop in tree.find_all(nodes.For):
            if not _bounded_iterable(loop.iter):
                raise ConversationValueError(
                    f"{self.field} loops over something other than a list: a {{% for %}} loop may "
                    f"go over {', '.join(sorted(LOOPABLE_VARIABLES))}, a range(...) or a literal "
                    "list"
                )

        def depth(node: nodes.Node, level: int) -> None:
            for child in node.iter_child_nodes():
                inner = level + 1 if isinstance(child, nodes.For) else level
                if inner > MAX_LOOP_DEPTH:
                    raise ConversationValueError(
                        f"{self.field} nests loops {inner} deep; at most {MAX_LOOP_DEPTH} are allowed"
                    )
                depth(child, inner)

        depth(tree, 0)

    def render(self, variables: Mapping[str, Any]) -> str:
        """Render with ``variables`` (only the allowed ones are passed in); bounded in size and time."""
        context = {k: v for k, v in variables.items() if k in self.allowed}
        # The cap bounds what the template itself makes; the data passed in (a long transcript)
        # may legitimately be shown, a few times at most.
        data_chars = sum(len(v) for v in context.values() if isinstance(v, str))
        budget = MAX_OUTPUT_CHARS + 4 * data_chars
        deadline = time.thread_time() + MAX_RENDER_SECONDS
        pieces: list[str] = []
        size = 0
        try:
            for chunk in self._template.generate(**context):
                size += len(chunk)
                if size > budget:
                    raise ConversationValueError(
                        f"{self.field} produced more than {budget} characters; shorten it"
                    )
                if time.thread_time() > deadline:
                    raise ConversationValueError(
                        f"{self.field} needed more than {MAX_RENDER_SECONDS} s of computing to "
                        "render; simplify it"
                    )
                pieces.append(chunk)
        except SecurityError as exc:
            raise ConversationValueError(
                f"{self.field} was rejected by the sandbox: {exc}"
            ) from exc
        except jinja2.UndefinedError as exc:
            raise ConversationValueError(
                f"{self.field} failed: {exc.message}; available: {sorted(self.allowed)}"
            ) from exc
        except (ArithmeticError, TypeError, ValueError) as exc:
            if isinstance(exc, ConversationValueError):
                raise
            raise ConversationValueError(f"{self.field} failed to render: {exc}") from exc
        return "".join(pieces)


__all__ = [
    "neutralize",
    "neutralize_value",
    "SafeTemplate",
    "compiled_template",
    "ZERO_WIDTH_SPACE",
]
