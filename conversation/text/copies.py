"""Replies that copy an earlier message of the room (pure).

A small model (SmolLM2-135M) often answers with a message already in the room, word for word: in
one measured room 7 of 8 replies were the same sentence from both speakers. Stored, such a copy
reads as a new message and feeds the next prompts, so the talk loops. This module says when a
reply repeats what is already there:

- ``copy_words(text)``: the words a comparison sees (case, punctuation and spacing ignored);
- an **exact copy**: a reply whose words are those of an earlier message, at least ``MIN_WORDS``
  long (SmolLM2 said "The seller accepts." six turns running); or a reply that repeats a draft
  of the same turn that a person stopped or denied (the draft itself, the draft so far followed
  by more, or a near copy of it). Shorter replies ("DEAL", "I agree.", "Ten dollars." answering
  "Ten dollars.") repeat legitimately and are never copies. A room treats an exact copy like a
  reply that only echoed its prompt: it asks again (the copy is never cached), and after its
  tries stores a pass with the reason (``rooms.engine.asking``);
- a **near copy**: a reply whose words match one of the last ``NEAR_WINDOW`` messages' at a ratio
  of at least ``NEAR_RATIO`` (``difflib``'s ratio over words), both at least ``NEAR_MIN_WORDS``
  long. It is kept, and flagged on the turn (``data["near_copy"]``) and in Results.

Only models that author their replies are checked (``models.chat_shape.checks_copies``): the
offline model's own voice and EDSL's canned test model repeat by design.

``MessageIndex`` keeps a room's messages as they are folded into its log (``rooms.log.RoomLog``):
adding a message and looking a reply up cost the same in a long room as in a short one (a dict of
exact keys, and only the last ``NEAR_WINDOW`` messages compared word by word). ``RepeatGuard`` is
what one call checks against: the index as the turn was claimed, and the turn's denied drafts.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from difflib import SequenceMatcher

#: Replies shorter than this many words are never copies (agreements repeat on purpose).
MIN_WORDS = 3
#: A reply this close to a recent message (difflib's ratio over words) is a near copy.
NEAR_RATIO = 0.8
#: Near copies are looked for between messages of at least this many words (a ratio over three
#: words says little: "The seller accepts." / "The buyer accepts.").
NEAR_MIN_WORDS = 5
#: How many of the latest messages a reply is compared with word by word.
NEAR_WINDOW = 20

_WORD = re.compile(r"\w+")


def copy_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` as copies are compared: case-folded, punctuation and spacing
    dropped."""
    return tuple(_WORD.findall(text.casefold()))


def similarity(first: Iterable[str], second: Iterable[str]) -> float:
    """How alike two word sequences are (0..1: difflib's ratio over words)."""
    return SequenceMatcher(None, tuple(first), tuple(second), autojunk=False).ratio()


@dataclass(frozen=True, slots=True)
class NearCopy:
    """A reply close to an earlier message: that message's seq and how alike they are."""

    seq: int
    similarity: float

    def record(self) -> dict[str, float | int]:
        """What a turn stores (``data["near_copy"]``)."""
        return {"seq": self.seq, "similarity": round(self.similarity, 2)}


class MessageIndex:
    """A room's messages by their words, added in seq order (see the module docstring)."""

    __slots__ = ("_first", "_recent")

    def __init__(self) -> None:
        self._first: dict[tuple[str, ...], int] = {}
        self._recent: deque[tuple[int, tuple[str, ...]]] = deque(maxlen=NEAR_WINDOW)

    def add(self, seq: int, text: str) -> None:
        """Index the message at ``seq`` (later seqs than every one added so far)."""
        words = copy_words(text)
        if len(words) < MIN_WORDS:
            return
        self._first.setdefault(words, seq)
        self._recent.append((seq, words))

    def exact(self, text: str, before_seq: int | None = None) -> int | None:
        """The seq of the first earlier message ``text`` copies word for word (before
        ``before_seq`` when given), or None."""
        words = copy_words(text)
        if len(words) < MIN_WORDS:
            return None
        seq = self._first.get(words)
        if seq is None or (before_seq is not None and seq >= before_seq):
            return None
        return seq

    def near(self, text: str, before_seq: int | None = None) -> NearCopy | None:
        """The closest of the recent messages ``text`` nearly copies, or None."""
        words = copy_words(text)
        if len(words) < NEAR_MIN_WORDS:
            return None
        best: NearCopy | None = None
        for seq, earlier in reversed(self._recent):
            if (before_seq is not None and seq >= before_seq) or len(earlier) < NEAR_MIN_WORDS:
                continue
            matcher = SequenceMatcher(None, words, earlier, autojunk=False)
            if matcher.real_quick_ratio() < NEAR_RATIO or matcher.quick_ratio() < NEAR_RATIO:
                continue
            ratio = matcher.ratio()
            if ratio >= NEAR_RATIO and (best is None or ratio > best.similarity):
                best = NearCopy(seq, ratio)
        return best


def _repeats(words: tuple[str, ...], draft: tuple[str, ...]) -> bool:
    """A reply repeats a stopped or denied draft when it is the draft, begins with it (a stop
    keeps the draft so far), or nearly copies it."""
    if len(draft) < MIN_WORDS:
        return False
    if words[: len(draft)] == draft:
        return True
    return similarity(words, draft) >= NEAR_RATIO


@dataclass(frozen=True, slots=True)
class RepeatGuard:
    """What one turn's reply must not repeat: the room's messages before the turn (``index``,
    ``before_seq``) and the drafts of this turn that people denied or stopped."""

    index: MessageIndex
    before_seq: int
    drafts: tuple[str, ...] = ()

    def copied(self, text: str) -> str | None:
        """What ``text`` copies word for word ("message #7", "a draft of this turn that was
        stopped or denied"), or None."""
        seq = self.index.exact(text, self.before_seq)
        if seq is not None:
            return f"message #{seq}"
        words = copy_words(text)
        if len(words) >= MIN_WORDS and any(_repeats(words, copy_words(d)) for d in self.drafts):
            return "a draft of this turn that was stopped or denied"
        return None

    def near(self, text: str) -> NearCopy | None:
        """The recent message ``text`` nearly copies, or None."""
        return self.index.near(text, self.before_seq)


__all__ = [
    "MIN_WORDS",
    "NEAR_MIN_WORDS",
    "NEAR_RATIO",
    "NEAR_WINDOW",
    "MessageIndex",
    "NearCopy",
    "RepeatGuard",
    "copy_words",
    "similarity",
]
