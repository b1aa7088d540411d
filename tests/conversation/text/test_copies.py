"""Replies that copy an earlier message (issue 35): an exact copy is found in O(1) whatever the
room's length, short replies never count, a near copy is found among the recent messages, and a
redraft that repeats a stopped draft is a copy of it."""

from __future__ import annotations

from conversation.text.copies import MIN_WORDS, NEAR_WINDOW, MessageIndex, RepeatGuard

SENTENCE = "I can sell you the mug for eight dollars today."


def index_of(*texts: str) -> MessageIndex:
    index = MessageIndex()
    for seq, text in enumerate(texts, start=1):
        index.add(seq, text)
    return index


def test_an_exact_copy_ignores_case_spacing_and_punctuation() -> None:
    index = index_of("Hello there.", SENTENCE, "Fine, nine then?")
    assert index.exact("i can sell you the MUG for eight dollars   today") == 2
    assert index.exact(f'"{SENTENCE}"') == 2
    assert index.exact("I can sell you the mug for nine dollars today.") is None
    # only messages before the turn count
    assert index.exact(SENTENCE, before_seq=2) is None


def test_short_replies_repeat_legitimately() -> None:
    index = index_of("DEAL", "I agree.", "Ten dollars.")
    assert MIN_WORDS == 3
    for reply in ("DEAL", "I agree.", "Ten dollars."):
        assert index.exact(reply) is None and index.near(reply) is None
    assert index_of("The seller accepts.").exact("the seller ACCEPTS") == 1


def test_a_near_copy_is_found_among_the_recent_messages_only() -> None:
    index = index_of(SENTENCE, *(f"filler message number {n} of the room" for n in range(30)))
    near = "I can sell you the mug for eight dollars, today only!"
    assert index.near(near) is None  # the sentence is older than the window
    recent = index_of(*(f"filler message number {n} of the room" for n in range(5)), SENTENCE)
    found = recent.near(near)
    assert found is not None and found.seq == 6 and 0.8 <= found.similarity < 1.0
    assert recent.near("What colour is the mug, and is it chipped anywhere?") is None
    assert NEAR_WINDOW >= 10


def test_a_redraft_repeating_a_stopped_draft_is_a_copy() -> None:
    guard = RepeatGuard(index_of("hello"), 2, drafts=("I can sell you the mug",))
    assert guard.copied("I can sell you the mug for eight dollars.") is not None  # goes on
    assert guard.copied("I can sell you the mug") is not None
    assert guard.copied("What would you pay for it, then?") is None
    # an earlier message word for word names its seq
    guard = RepeatGuard(index_of(SENTENCE), 5)
    assert guard.copied(SENTENCE.upper()) == "message #1"
