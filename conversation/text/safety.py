"""Keeping untrusted text away from template engines (docs/design.md, "Untrusted text never reaches a template engine").

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
from itertools import islice
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from conversation.exceptions import ConversationValueError
from conversation.text.limits import MAX_AGENTS

ZERO_WIDTH_SPACE = "\u200b"
_OPENER = re.compile(r"\{(?=[{%#])")

MAX_TEMPLATE_CHARS = 20_000
MAX_OUTPUT_CHARS = 20_000
MAX_RENDER_SECONDS = 0.5
"""CPU seconds of the rendering thread (``time.thread_time``), not wall-clock time: a loaded
machine (other processes, other threads holding the GIL) must never make a template fail."""
#: Chunks a template yields between two looks at the render's CPU clock.
CLOCK_EVERY_CHUNKS = 32
MAX_RANGE = 1_000
#: The only variables a template may loop over (lists of bounded size). Any other variable is
#: text: looping over its characters does no prompt any good and, nested, would cost millions of
#: steps with no output to notice it by.
LOOPABLE_VARIABLES = frozenset({"agent_names"})
MAX_LOOP_DEPTH = 2
#: Steps of nested loops in all (a loop over agent_names counts as MAX_AGENTS steps).
MAX_LOOP_STEPS = 100_000
_BANNED_ATTRIBUTES = frozenset({"format", "format_map", "mro", "func_globals", "gi_frame"})
_BANNED_NAMES = frozenset({"self", "caller", "varargs", "kwargs"})
_BANNED_FILTERS = frozenset({"attr"})
#: Variables that hold numbers: ``current_turn * 2`` is arithmetic, ``conversation * 2`` is not.
_NUMBER_VARIABLES = frozenset({"current_turn", "max_turns", "turns_left"})
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


def _refused(field: str, what: str) -> ConversationValueError:
    return ConversationValueError(
        f"{field} may not use {what}; use plain {{{{ variables }}}}, filters such as "
        "| join(', ') and simple {% if %} / {% for %} blocks"
    )


def _static_number(node: nodes.Node, field: str) -> Any:
    """The value of a constant arithmetic expression (bounded like the sandbox's), or None."""
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.Neg | nodes.Pos):
        inner = _static_number(node.node, field)
        return -inner if isinstance(node, nodes.Neg) and isinstance(inner, int | float) else inner
    if isinstance(node, nodes.Pow | nodes.Mul | nodes.Add | nodes.Sub):
        left = _static_number(node.left, field)
        right = _static_number(node.right, field)
        if left is None or right is None:
            return None
        operator = {nodes.Pow: "**", nodes.Mul: "*", nodes.Add: "+", nodes.Sub: "-"}[type(node)]
        try:
            return _environment().call_binop(None, operator, left, right)
        except SecurityError as exc:
            raise ConversationValueError(f"{field} was rejected: {exc}") from None
        except (ArithmeticError, TypeError, ValueError):
            return None
    return None


def _loop_size(node: nodes.Node, field: str) -> int:
    """How many times a loop over ``node`` may run at most (a list variable counts as the
    largest roster, ``MAX_AGENTS``)."""
    if isinstance(node, nodes.List | nodes.Tuple):
        return len(node.items)
    if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name):
        values = [_static_number(arg, field) for arg in node.args]
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            try:
                size = len(range(*values))
            except (TypeError, ValueError):
                return MAX_RANGE
            if size > MAX_RANGE:
                raise ConversationValueError(
                    f"{field} loops over range() of {size:,} items; at most {MAX_RANGE} are allowed"
                )
            return size
    if isinstance(node, nodes.Filter) and node.node is not None:
        return _loop_size(node.node, field)
    return MAX_AGENTS


def _check_expressions(tree: nodes.Template, field: str) -> None:
    """Refuse, before any rendering, what can only be an attack or a mistake: attribute tricks
    (``__class__``, ``__mro__``, ``.format``, ``| attr``), the template's own ``self``, constant
    powers, repetitions and ranges too large, repeating a variable's text, and nested loops of
    more than ``MAX_LOOP_STEPS`` steps in all."""
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        if isinstance(node, nodes.Getattr):
            attribute = node.attr
        elif (
            isinstance(node, nodes.Getitem)
            and isinstance(node.arg, nodes.Const)
            and isinstance(node.arg.value, str)
        ):
            attribute = node.arg.value
        else:
            continue
        if attribute.startswith("_") or attribute in _BANNED_ATTRIBUTES:
            raise _refused(field, f"the attribute {attribute!r}")
    for name in tree.find_all(nodes.Name):
        if name.name in _BANNED_NAMES:
            raise _refused(field, f"{name.name!r}")
    for filter_ in tree.find_all(nodes.Filter):
        if filter_.name in _BANNED_FILTERS:
            raise _refused(field, f"the filter {filter_.name!r}")
        for keyword in filter_.kwargs:  # map(attribute='__class__'), sort(attribute=...)
            value = keyword.value
            if (
                isinstance(value, nodes.Const)
                and isinstance(value.value, str)
                and (value.value.startswith("_") or "._" in value.value)
            ):
                raise _refused(field, f"the attribute {value.value!r}")
    for call in tree.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name == "range":
            _loop_size(call, field)
    for binary in tree.find_all((nodes.Pow, nodes.Mul)):
        _static_number(binary, field)
        if isinstance(binary, nodes.Mul) and any(
            isinstance(side, nodes.Filter | nodes.Concat)
            or (isinstance(side, nodes.Name) and side.name not in _NUMBER_VARIABLES)
            for side in (binary.left, binary.right)
        ):
            raise _refused(
                field,
                "* on a variable (repeating text makes a prompt grow with the conversation)",
            )

    def steps(node: nodes.Node, outer: int) -> None:
        for child in node.iter_child_nodes():
            inner = outer
            if isinstance(child, nodes.For):
                inner = outer * max(_loop_size(child.iter, field), 1)
                if inner > MAX_LOOP_STEPS:
                    raise ConversationValueError(
                        f"{field} nests loops that would run {inner:,} steps; at most "
                        f"{MAX_LOOP_STEPS:,} are allowed"
                    )
            steps(child, inner)

    steps(tree, 1)


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
        try:
            undeclared = meta.find_undeclared_variables(tree)  # compiles: finds unknown filters
        except jinja2.TemplateError as exc:
            raise ConversationValueError(
                f"{field} is not a valid template: {exc.message}; use plain {{{{ variables }}}} "
                "and the usual filters (join, upper, default, ...)"
            ) from exc
        unknown = undeclared - self.allowed - {"range"}
        if unknown:
            raise ConversationValueError(
                f"{field} uses unknown variable(s) {sorted(unknown)}; "
                f"available: {sorted(self.allowed)}"
            )
        try:
            self._template = self._env.from_string(tree)
        except jinja2.TemplateError as exc:  # an unknown filter or test, found when compiling
            raise ConversationValueError(
                f"{field} is not a valid template: {exc.message}; use plain {{{{ variables }}}} "
                "and the usual filters (join, upper, default, ...)"
            ) from exc
        # Jinja layers a template's globals over its environment's in a ChainMap that every
        # render walks twice; this environment is private and never changes, so a plain dict of
        # the same names renders the same text a fifth faster (a render per turn).
        self._template.globals = dict(self._template.globals)

    def trial(self, variable_sets: Iterable[Mapping[str, Any]]) -> None:
        """Render once with each set of representative values and discard the text: a template
        that fails (an unsafe attribute, a huge result, a division by zero, a missing value)
        is refused now, naming the field, instead of failing a turn later."""
        for variables in variable_sets:
            self.render(variables)

    def _check_tree(self, tree: nodes.Template) -> None:
        for node in tree.find_all(_BANNED_NODES):
            raise ConversationValueError(
                f"{self.field} may not use {type(node).__name__.lower()} blocks; "
                "use plain {{ variables }}, {% if %} and simple {% for %} loops"
            )
        _check_expressions(tree, self.field)

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
        chunks = self._template.generate(**context)
        try:
            # The chunks are taken a block at a time (C-speed, a room's template renders in a
            # few dozen per turn), and the size and the CPU clock (a system call) are looked at
            # after each block: a runaway template is stopped within one block.
            while True:
                block = list(islice(chunks, CLOCK_EVERY_CHUNKS))
                size += sum(map(len, block))
                if size > budget:
                    raise ConversationValueError(
                        f"{self.field} produced more than {budget} characters; shorten it"
                    )
                pieces += block
                self._check_clock(deadline)
                if len(block) < CLOCK_EVERY_CHUNKS:
                    break
        except SecurityError as exc:
            raise ConversationValueError(
                f"{self.field} was rejected by the sandbox: {exc}"
            ) from exc
        except jinja2.UndefinedError as exc:
            raise ConversationValueError(
                f"{self.field} failed: {exc.message}; available: {sorted(self.allowed)}"
            ) from exc
        except jinja2.TemplateError as exc:
            raise ConversationValueError(f"{self.field} failed to render: {exc}") from exc
        except (ArithmeticError, TypeError, ValueError) as exc:
            if isinstance(exc, ConversationValueError):
                raise
            raise ConversationValueError(f"{self.field} failed to render: {exc}") from exc
        return "".join(pieces)

    def _check_clock(self, deadline: float) -> None:
        if time.thread_time() > deadline:
            raise ConversationValueError(
                f"{self.field} needed more than {MAX_RENDER_SECONDS} s of computing to "
                "render; simplify it"
            )


__all__ = [
    "neutralize",
    "neutralize_value",
    "SafeTemplate",
    "compiled_template",
    "ZERO_WIDTH_SPACE",
]
