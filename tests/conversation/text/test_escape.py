"""``escape`` puts a message on one transcript line, and every prompt holds its lines: its
output must never change (prompts, and so EDSL's cache keys, would). Checked against the
character-by-character definition it replaced, and round-tripped by ``unescape``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conversation.text.transcript import escape, unescape

LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
TEXT = st.text(
    alphabet=st.sampled_from([*LINE_BREAKS, "\\", "a", "é", "😀", "u", "0", "\t", "\x00"])
)


def reference(text: str) -> str:
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char in LINE_BREAKS:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


@given(TEXT)
def test_escape_writes_what_it_always_wrote(text: str) -> None:
    assert escape(text) == reference(text)


@given(st.text() | TEXT)
def test_escape_is_one_line_and_unescape_undoes_it(text: str) -> None:
    line = escape(text)
    assert not any(char in LINE_BREAKS for char in line)
    assert unescape(line) == text


def test_a_known_message() -> None:
    assert escape("a\\b\nc\u2028") == "a\\\\b\\nc\\u2028"
