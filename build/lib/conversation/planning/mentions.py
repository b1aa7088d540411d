"""``@name`` addressing between participants (docs/design.md, "Rooms, activities and mentions").

Guarantees of :func:`extract_mentions`:

- a mention is ``@`` followed by ``[A-Za-z0-9][\\w\\-.]*`` (letters, digits, underscore, dash,
  dot; a name never starts with ``_``, ``-`` or ``.``);
- an ``@`` glued to a preceding word character is not a mention, so ``foo@bar.com`` is safe;
- names come back in first-seen order, de-duplicated, with their case preserved.

:func:`mentioned_roster` is how planners turn mentions into roster names. Matching is
case-sensitive. Because the grammar allows dots and dashes inside a name, a mention that ends a
sentence (``"over to @reviewer."``) is captured as ``reviewer.``; when that exact name is not on
the roster, trailing dots and dashes are dropped before matching, so ordinary punctuation does not
silently lose an addressee. An exact match always wins (a roster name may end with a dot).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["extract_mentions", "mentioned_roster"]

# The lookbehind rejects an "@" preceded by a word character: that is an e-mail address or a
# handle glued to a word, never an addressee.
_MENTION_RE = re.compile(r"(?<!\w)@([A-Za-z0-9][\w\-.]*)")


def extract_mentions(text: str) -> list[str]:
    """The ordered, de-duplicated ``@name`` mentions in ``text`` (first-seen order)."""
    if not text:
        return []
    # A dict keeps insertion order: first-seen order makes addressing deterministic.
    seen: dict[str, None] = {}
    for match in _MENTION_RE.finditer(text):
        seen.setdefault(match.group(1), None)
    return list(seen)


def mentioned_roster(text: str, roster: Sequence[str]) -> list[str]:
    """Roster names mentioned in ``text``, in roster order, each once.

    Mentions of names not on the roster are ignored. See the module docstring for the handling of
    a trailing dot or dash.
    """
    names = set(roster)
    found: set[str] = set()
    for mention in extract_mentions(text):
        if mention in names:
            found.add(mention)
            continue
        trimmed = mention.rstrip(".-")
        if trimmed in names:
            found.add(trimmed)
    # Roster order, not mention order: the seed makes the roster the tie-breaker.
    return [name for name in roster if name in found]
