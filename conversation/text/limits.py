"""Size limits for everything that crosses the trust boundary, and the checks that apply them.

Every entry point (``Room.create``, ``room.post``, imports, experiment designs, ...) measures
what it is given *before* parsing, serialising or storing it: a length is read in constant time
(``len``), and JSON data is walked once, stopping at the first level or character over the limit.
So a 50 MB value is refused at once, never copied, encoded or written.

Each limit has a default and an environment setting (``ROOMS_MAX_*``), declared once in
``settings.Settings`` (the table: docs/limits.md) and read once, when this module is imported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from conversation.exceptions import ConversationValueError
from settings import SETTINGS

# Read once, as this module loads: the schemas, forms and defaults built from these limits are
# made at import (docs/limits.md: "read at start").
MAX_MESSAGE_CHARS: int = SETTINGS.max_message_chars
MAX_REQUEST_ID_CHARS: int = SETTINGS.max_request_id_chars
MAX_NAME_CHARS: int = SETTINGS.max_name_chars
MAX_AGENTS: int = SETTINGS.max_agents
MAX_TRAITS_CHARS: int = SETTINGS.max_traits_chars
MAX_CONFIG_CHARS: int = SETTINGS.max_config_chars
MAX_STOP_REASON_CHARS: int = SETTINGS.max_stop_reason_chars
MAX_CONDITION_CHARS: int = SETTINGS.max_condition_chars
MAX_DESIGN_CHARS: int = SETTINGS.max_design_chars
MAX_IMPORT_BYTES: int = SETTINGS.max_import_bytes
MAX_IMPORT_MESSAGES: int = SETTINGS.max_import_messages
MAX_DEPTH: int = SETTINGS.max_depth


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
