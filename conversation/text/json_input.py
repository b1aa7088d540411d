"""Reading a JSON document a person uploads or pastes (an import, an agents file), in the
person's words: a file too large, empty, not UTF-8, not JSON, with ``NaN`` or ``Infinity``, a
whole number too long to read, or nested deeper than a limit is refused with what to do about
it, never with a decoder's or the interpreter's message (``'utf-8' codec can't decode byte
0xfa``, ``maximum recursion depth exceeded``, ``Exceeds the limit (4300 digits) for integer
string conversion``, ``Unexpected UTF-8 BOM``). A UTF-8 byte order mark (Windows editors write
one) is read past.

Sizes are measured before anything is decoded or parsed; the depth is walked once without
recursion after parsing (a document so deep that the parser itself gives up is refused with the
same message).
"""

from __future__ import annotations

import json
import math
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.text.limits import check_depth

#: The most digits a whole number may have: an id or a count has at most 19; Python refuses
#: past 4,300 with a message that names ``sys.set_int_max_str_digits``.
MAX_DIGITS = 100
#: The byte order mark some editors put before UTF-8 text.
BOM = "\ufeff"


def read_json(
    data: bytes | bytearray | memoryview | str,
    *,
    what: str,
    max_bytes: int,
    max_depth: int,
    error: type[ConversationValueError] = ConversationValueError,
) -> Any:
    """The document in ``data`` (bytes must be UTF-8), or ``error`` saying, about ``what`` (``"the
    import"``, ``"the file"``), what is wrong and how to fix it."""
    if not isinstance(data, str):
        if len(data) > max_bytes:
            raise error(f"{what} is {len(data):,} bytes; the limit is {max_bytes:,}")
        try:
            data = bytes(data).decode("utf-8-sig", errors="strict")
        except UnicodeDecodeError as exc:
            raise error(
                f"{what} is not UTF-8 text (byte {exc.start}); save the file as UTF-8 JSON"
            ) from None
    if len(data) > max_bytes or len(data.encode("utf-8")) > max_bytes:
        raise error(f"{what} is larger than {max_bytes:,} bytes")
    data = data.removeprefix(BOM)
    if not data.strip():
        raise error(f"{what} is empty; it should hold JSON")

    def constant(token: str) -> Any:
        raise error(f"{what} contains {token}, which is not valid JSON; use null or a number")

    def finite(token: str) -> float:
        value = float(token)
        if not math.isfinite(value):
            raise error(f"{token[:40]} is not a finite number; use a smaller number or null")
        return value

    def whole(token: str) -> int:
        if len(token.lstrip("-")) > MAX_DIGITS:
            raise error(
                f"{what} holds a number of {len(token.lstrip('-')):,} digits; "
                f"the most is {MAX_DIGITS}: write it as text (in quotes)"
            )
        return int(token)

    try:
        document = json.loads(data, parse_constant=constant, parse_float=finite, parse_int=whole)
    except json.JSONDecodeError as exc:
        raise error(
            f"{what} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise error(f"{what} is nested more than {max_depth} levels deep; flatten it") from None
    check_depth(document, what, max_depth=max_depth, error=error)
    return document


__all__ = ["MAX_DIGITS", "read_json"]
