"""What a reply must not carry into a room: the prompt's own scaffolding and made-up turns.

A small model (SmolLM2-135M) given a room's prompt often copies its instructions ("This is turn 3
of 4 (2 left, counting this one).", "Write Bob's reply ...", "Messages so far ...") or goes on
writing the conversation as other people ("Seller: I want $9"). Both feed the next prompts and
the talk falls into loops. This module recognises them:

- ``SCAFFOLDING``: the phrases of every prompt the rooms send (the default room prompt, the
  chat-shaped system prompt of ``models.chat_shape``, a persona, a moderator's feedback, the
  transcript header); a *sentence* holding one is scaffolding;
- ``other_speaker(line, own, roster)``: the member of ``roster`` (not one of ``own``) whose turn
  a line opens, as a transcript line (``3. Bob: ...``), a label (``Bob: ...``, ``**Bob**: ...``,
  ``- Bob (private to Ann): ...``, ``[Bob]:``, ``<Bob>:``, ``Bob's reply:``, ``The seller: ...`` for a member
  named Seller: names are compared by ``name_key``), a turn told as a story (``The seller says:
  ...``, ``Bob replied, "..."``) or an old ``[seq 3] Bob:`` header; None otherwise;
- ``without_scaffolding(text)``: ``text`` with every scaffolding sentence removed (a line left
  empty goes too);
- ``narrates_a_pass(line, roster)``: a line that only says a member passed ("The seller
  passed.", as the chat shape shows a pass), which a model copies as if it were a message;
- ``reply_problems(reply, own, roster)``: which of ``"scaffolding"`` and ``"made_up_turn"`` a
  reply shows (``benchmarks/echo_rate.py`` counts them).

``text.transcript.strip_echo`` uses them: what a room stores has neither (the raw reply stays in
the turn's details).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: One pattern per prompt phrase a model copies (case-insensitive, searched inside a sentence).
SCAFFOLDING: tuple[str, ...] = (
    r"\bin a group chat with\b",
    r"\bthis is a group chat between\b",
    r"\band the people who write there\b",
    r"\bmessages so far\b",
    r"\boldest first\b",
    r"\bone message per line\b",
    r"\(no messages yet\)",
    r"\bthis is turn \d+ of \d+\b",
    r"\bturn \d+ of \d+ \(\d+ left\b",
    r"\bcounting this one\b",
    r"\baddress your message to\b",
    r"\bwrite [^.\n]{1,64}'s (?:reply|next message)\b",
    r"\breply as [^.\n]{1,64} only\b",
    r"\bone short message in your own words\b",
    r"\bto hand over to someone\b",
    r"\bmention them as @name\b",
    r"\breply with the single word pass\b",
    r"\bstay in character as\b",
    r"\byour traits:",
    r"\ba moderator did not allow your previous draft\b",
    r"\byour previous reply was stopped before you finished it\b",
    r"\bthey gave no reason\b",
    r"\bwrite a different message, or reply pass\b",
    r"^\W*your turn\W*$",  # the chat shape's "(your turn)", copied with or without brackets
)
_SCAFFOLDING = re.compile("|".join(f"(?:{p})" for p in SCAFFOLDING), re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
#: Verbs that tell a made-up turn as a story ("The seller says: ...", 'Ben replied, "..."').
_SPEECH_VERBS = "says|said|replies|replied|writes|wrote|answers|answered|responds|responded"
# A line that opens someone's turn: optional list/number/markdown decoration, then a name
# (1-64 characters, no colon or brackets; itself in [brackets] or <angles> or not), optional
# "(flags)", then a colon, or a speech verb and a colon or an opening quote.
#: A label naming a member's part rather than the member ("Seller's response: ...", as SmolLM2
#: wrote it in a mug room): the name, then this, then the colon.
POSSESSIVE_LABEL = r"(?:['\u2019]s\s+(?:response|reply|answer|message|turn|offer))?"
_TURN_OPENER = re.compile(
    r"^\s*(?:\[(?:seq|turn) -?\d+\]\s*|-?\d+\.\s+|[-*>]\s+)?[*_]{0,2}[\[<]?"
    rf"(?P<name>[^\n:|\[\]{{}}()<>*_]{{1,64}}?){POSSESSIVE_LABEL}[\]>]?[*_]{{0,2}}"
    r"(?:\s\([^()\n]*\))?[*_]{0,2}"
    rf"(?::|\s+(?:{_SPEECH_VERBS})\s*(?::|,?\s*[\"\u201c]))",
    re.IGNORECASE,
)


def is_scaffolding(sentence: str) -> bool:
    """True when ``sentence`` holds one of the prompts' phrases (``SCAFFOLDING``)."""
    return _SCAFFOLDING.search(sentence) is not None


def without_scaffolding(text: str) -> str:
    """``text`` without its scaffolding sentences; a line left empty is dropped, the other lines
    keep their order and their own words."""
    kept: list[str] = []
    for line in text.splitlines():
        if not _SCAFFOLDING.search(line):
            kept.append(line)
            continue
        sentences = [s for s in _SENTENCE_END.split(line.strip()) if not is_scaffolding(s)]
        rest = " ".join(sentences).strip()
        if rest:
            kept.append(rest)
    return "\n".join(kept).strip()


_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


def name_key(name: str) -> str:
    """How a speaker's name is compared with a label a model wrote: case-folded, without a
    leading article ("The seller:" opens the turn of a member named Seller)."""
    return _ARTICLE.sub("", name.strip()).casefold()


def other_speaker(line: str, own: Iterable[str], roster: Iterable[str]) -> str | None:
    """The member of ``roster`` other than ``own`` whose turn ``line`` opens, or None."""
    match = _TURN_OPENER.match(line)
    if match is None:
        return None
    name = name_key(match["name"])
    mine = {name_key(n) for n in own}
    for member in roster:
        if name_key(member) == name and name not in mine:
            return member
    return None


_PASS_LINE = re.compile(r"^\W*(?P<name>.{1,64}?)\s+passed\W*$", re.IGNORECASE)


def narrates_a_pass(line: str, roster: Iterable[str]) -> bool:
    """True when ``line`` only says that a member passed ("Ben passed.", "The seller passed."):
    how a pass is shown to a chat model (``models.chat_shape``), copied back, never a message."""
    match = _PASS_LINE.match(line.strip())
    if match is None:
        return False
    name = name_key(match["name"])
    return any(name_key(member) == name for member in roster)


def made_up_turn_at(text: str, own: Iterable[str], roster: Iterable[str]) -> int | None:
    """The index of the first line of ``text`` that opens another member's turn, or None."""
    own, roster = list(own), list(roster)
    for index, line in enumerate(text.splitlines()):
        if other_speaker(line, own, roster) is not None:
            return index
    return None


def reply_problems(reply: str, own: Iterable[str], roster: Iterable[str]) -> set[str]:
    """``{"scaffolding", "made_up_turn"}``, or the part of it ``reply`` shows."""
    found = set()
    if _SCAFFOLDING.search(reply):
        found.add("scaffolding")
    if made_up_turn_at(reply, own, roster) is not None:
        found.add("made_up_turn")
    return found


__all__ = [
    "POSSESSIVE_LABEL",
    "SCAFFOLDING",
    "name_key",
    "narrates_a_pass",
    "is_scaffolding",
    "made_up_turn_at",
    "other_speaker",
    "reply_problems",
    "without_scaffolding",
]
