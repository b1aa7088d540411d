"""Size limits for everything that crosses the trust boundary, and the checks that apply them.

Every entry point (``Room.create``, ``room.post``, imports, experiment designs, ...) measures
what it is given *before* parsing, serialising or storing it: a length is read in constant time
(``len``), and JSON data is walked once, stopping at the first level or character over the limit.
So a 50 MB value is refused at once, never copied, encoded or written.

Each limit has a default and an environment setting (read once, when this module is imported):

=====================  =================  ===========================================
limit                  default            setting
=====================  =================  ===========================================
message text           20,000 chars       ``ROOMS_MAX_MESSAGE_CHARS``
request id             200 chars          ``ROOMS_MAX_REQUEST_ID_CHARS``
room, experiment name  200 chars          ``ROOMS_MAX_NAME_CHARS``
agents in a room       100                ``ROOMS_MAX_AGENTS``
one agent's traits     20,000 chars       ``ROOMS_MAX_TRAITS_CHARS`` (as JSON)
a whole room config    1,000,000 chars    ``ROOMS_MAX_CONFIG_CHARS`` (as JSON)
stop reason            1,000 chars        ``ROOMS_MAX_STOP_REASON_CHARS``
condition label        200 chars          ``ROOMS_MAX_CONDITION_CHARS``
experiment design      2,000,000 chars    ``ROOMS_MAX_DESIGN_CHARS`` (as JSON)
an import file         5,000,000 bytes    ``ROOMS_MAX_IMPORT_BYTES``
messages in an import  10,000             ``ROOMS_MAX_IMPORT_MESSAGES``
nesting depth          10 levels          ``ROOMS_MAX_DEPTH`` (any JSON value)
=====================  =================  ===========================================
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from conversation.exceptions import ConversationValueError


def _setting(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise ConversationValueError(
            f"{name}={raw!r} must be a positive whole number (the default is {default})"
        )
    return value


MAX_MESSAGE_CHARS = _setting("ROOMS_MAX_MESSAGE_CHARS", 20_000)
MAX_REQUEST_ID_CHARS = _setting("ROOMS_MAX_REQUEST_ID_CHARS", 200)
MAX_NAME_CHARS = _setting("ROOMS_MAX_NAME_CHARS", 200)
MAX_AGENTS = _setting("ROOMS_MAX_AGENTS", 100)
MAX_TRAITS_CHARS = _setting("ROOMS_MAX_TRAITS_CHARS", 20_000)
MAX_CONFIG_CHARS = _setting("ROOMS_MAX_CONFIG_CHARS", 1_000_000)
MAX_STOP_REASON_CHARS = _setting("ROOMS_MAX_STOP_REASON_CHARS", 1_000)
MAX_CONDITION_CHARS = _setting("ROOMS_MAX_CONDITION_CHARS", 200)
MAX_DESIGN_CHARS = _setting("ROOMS_MAX_DESIGN_CHARS", 2_000_000)
MAX_IMPORT_BYTES = _setting("ROOMS_MAX_IMPORT_BYTES", 5_000_000)
MAX_IMPORT_MESSAGES = _setting("ROOMS_MAX_IMPORT_MESSAGES", 10_000)
MAX_DEPTH = _setting("ROOMS_MAX_DEPTH", 10)


def check_text(
    value: Any,
    field: str,
    limit: int,
    *,
    empty: bool = False,
    one_line: bool = False,
    error: type[ConversationValueError] = ConversationValueError,
) -> str:
    """``value`` if it is text of at most ``limit`` characters (non-blank unless ``empty``,
    without control characters when ``one_line``); else ``error`` naming ``field``."""
    problem = text_problem(value, limit, empty=empty, one_line=one_line)
    if problem is not None:
        raise error(f"{field} {problem}")
    return value


def text_problem(
    value: Any, limit: int, *, empty: bool = False, one_line: bool = False
) -> str | None:
    """The text rule of :func:`check_text` as a phrase that follows the field's name ("is 1,000
    characters; the limit is 200: shorten it"), or None when ``value`` passes."""
    if not isinstance(value, str):
        return f"must be text, got {type(value).__name__}"
    if len(value) > limit:
        return f"is {len(value):,} characters; the limit is {limit:,}: shorten it"
    if not empty and not value.strip():
        return "must not be empty"
    if one_line and any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "must be one line without control characters (newlines, tabs, NUL)"
    return None


def message_problem(
    value: Any, limit: int = MAX_MESSAGE_CHARS, *, empty: bool = False
) -> str | None:
    """THE message rule, the one copy every entry point uses (a posted message, an edited draft,
    an imported message or event): text, non-blank unless ``empty``, at most ``limit``
    characters (measured by ``len`` before anything else), no NUL character (PostgreSQL cannot
    store one in text). Returns what is wrong as a phrase that follows the field's name
    ("is limited to ..."), or None when the message is fine."""
    if not isinstance(value, str):
        return f"must be {'' if empty else 'non-empty '}text, got {type(value).__name__}"
    if len(value) > limit:
        return (
            f"is limited to {limit:,} characters (got {len(value):,}: longer than {limit}); "
            "shorten it"
        )
    if not empty and not value.strip():
        return "must be non-empty text"
    if "\x00" in value:
        return "may not contain NUL characters (\\x00); remove them"
    return None


def check_message(
    value: Any,
    field: str = "a message",
    limit: int = MAX_MESSAGE_CHARS,
    *,
    empty: bool = False,
    error: type[ConversationValueError] = ConversationValueError,
) -> str:
    """``value`` if it passes the message rule (:func:`message_problem`), else ``error`` naming
    ``field``: ``a message is limited to 20,000 characters (got 20,001: ...)``."""
    problem = message_problem(value, limit, empty=empty)
    if problem is not None:
        raise error(f"{field} {problem}")
    return value


def _size_of_number(value: int | float) -> int:
    if isinstance(value, bool):
        return 5
    if isinstance(value, int):
        return value.bit_length() // 3 + 2  # digits, estimated without converting
    return 24


def check_json_value(
    value: Any,
    field: str,
    *,
    max_chars: int,
    max_depth: int = MAX_DEPTH,
    error: type[ConversationValueError] = ConversationValueError,
) -> int:
    """Refuse ``value`` unless it is plain JSON data (dicts with text keys, lists or tuples,
    text, finite numbers, booleans, None) of at most ``max_depth`` levels and about
    ``max_chars`` characters as JSON. Returns that size estimate.

    One walk, no copy and no serialisation, stopping at the first level or character over: a
    50 MB string inside is refused in constant time. ``field`` and the path inside it name the
    offending part in the error.
    """
    total = 0
    stack: list[tuple[Any, int, str]] = [(value, 1, field)]
    while stack:
        item, depth, path = stack.pop()
        if depth > max_depth:
            raise error(
                f"{field} is nested more than {max_depth} levels deep (at {_short(path)}); "
                "flatten it"
            )
        if isinstance(item, str):
            total += len(item) + 2
        elif item is None or isinstance(item, bool):
            total += 5
        elif isinstance(item, int | float):
            if isinstance(item, float) and not math.isfinite(item):
                raise error(f"{_short(path)} holds {item!r}, which is not a finite number")
            total += _size_of_number(item)
        elif isinstance(item, Mapping):
            total += 2
            for key, child in item.items():
                if not isinstance(key, str):
                    raise error(
                        f"{_short(path)} has a key {type(key).__name__} {_clip(key)}; keys must "
                        "be text"
                    )
                total += len(key) + 4
                if total > max_chars:
                    break
                stack.append((child, depth + 1, f"{path}.{key[:40]}"))
        elif isinstance(item, list | tuple):
            total += 2 + len(item)
            if total <= max_chars:
                stack.extend((child, depth + 1, f"{path}[{i}]") for i, child in enumerate(item))
        else:
            raise error(
                f"{_short(path)} must be plain JSON data (text, numbers, true/false, null, "
                f"lists, objects), got {type(item).__name__}"
            )
        if total > max_chars:
            raise error(
                f"{field} is larger than {max_chars:,} characters as JSON (the limit): make "
                "it smaller"
            )
    return total


def check_depth(
    value: Any,
    field: str,
    *,
    max_depth: int = MAX_DEPTH,
    error: type[ConversationValueError] = ConversationValueError,
) -> None:
    """Refuse ``value`` nested more than ``max_depth`` levels (dicts, lists, tuples; anything
    else is a leaf), naming ``field`` and the path: one walk without recursion, so a value
    nested 100,000 deep is refused, never a ``RecursionError``. For values that need not be
    JSON (an analysis scenario); JSON data takes :func:`check_json_value`."""
    stack: list[tuple[Any, int, str]] = [(value, 1, field)]
    while stack:
        item, depth, path = stack.pop()
        if depth > max_depth:
            raise error(
                f"{field} is nested more than {max_depth} levels deep (at {_short(path)}); "
                "flatten it"
            )
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1, f"{path}.{str(k)[:40]}") for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1, f"{path}[{i}]") for i, v in enumerate(item))


def _short(path: str) -> str:
    return path if len(path) <= 120 else path[:60] + "..." + path[-50:]


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = [
    "MAX_AGENTS",
    "MAX_CONDITION_CHARS",
    "MAX_CONFIG_CHARS",
    "MAX_DEPTH",
    "MAX_DESIGN_CHARS",
    "MAX_IMPORT_BYTES",
    "MAX_IMPORT_MESSAGES",
    "MAX_MESSAGE_CHARS",
    "MAX_NAME_CHARS",
    "MAX_REQUEST_ID_CHARS",
    "MAX_STOP_REASON_CHARS",
    "MAX_TRAITS_CHARS",
    "check_depth",
    "check_json_value",
    "check_message",
    "check_text",
    "message_problem",
    "text_problem",
]
