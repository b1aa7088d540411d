"""Ids from query parameters (``?room=7``, ``?experiment=3``): what a link may carry. No Streamlit.

A link is typed, pasted or edited by hand, so anything may arrive: text, a negative number, a
number too large for the database's integer column, several values. :func:`parse_id` turns it into
an id or a sentence for the page to show (the sentence never quotes the raw value, so nothing a
link carries is drawn).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The largest row id the databases store (a signed 64-bit integer).
MAX_ID = 2**63 - 1


@dataclass(frozen=True, slots=True)
class IdParam:
    """The outcome of reading one id parameter: ``value`` or a ``problem`` (or neither: absent)."""

    value: int | None = None
    problem: str | None = None


def parse_id(raw: object, what: str) -> IdParam:
    """``raw`` (a query parameter's value, or None) as a positive id of a ``what`` (e.g. "room")."""
    if raw is None or raw == "":
        return IdParam()
    text = str(raw).strip()
    if not (text.isascii() and text.isdigit()):
        return IdParam(problem=f"The link's {what} id is not a whole positive number; ignored it.")
    if len(text) > 19 or not 1 <= int(text) <= MAX_ID:
        return IdParam(problem=f"The link's {what} id is out of range; ignored it.")
    return IdParam(value=int(text))


__all__ = ["IdParam", "MAX_ID", "parse_id"]
