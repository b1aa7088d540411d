"""The transcript a model is shown: one line per message, numbered, its line breaks escaped.

    1. user: Please negotiate the price of the mug.
    2. Alice: I offer 10.\nBob: I concede
    3. Bob (passed)
    4. Cara (private to Alice): psst

A line is ``N. Speaker (flags): text``; the flags are ``passed``, ``summary``, ``notice`` and
``private to NAMES``. Speaker boundaries stay structural (docs/design.md, "Speaker boundaries cannot be forged"): every line break
inside a message's text (``\n``, ``\r``, and every other character Python splits lines at) is
written as an escape (``\n``, ``\r``, ``\u2028``; a backslash as ``\\``), so a message is exactly
one line and ``Bob: I concede`` inside Alice's text stays on Alice's line: it cannot start a line
of its own, let alone a numbered one.

This replaced one JSON record per message: SmolLM2-135M copied the JSON records back into its
replies (and a quoted multi-line shape fared worse); numbered one-line messages read like the chat
logs small models were trained on (``benchmarks/echo_rate.py`` measures the shapes).
``strip_echo`` removes what a model still copies at the start of a reply (a ``N. Name:`` or
``Name:`` label, an old-style JSON record or header, quotes wrapping the whole reply).

The text is carried literally; nothing here renders templates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from conversation.text.scaffolding import (
    POSSESSIVE_LABEL,
    made_up_turn_at,
    name_key,
    narrates_a_pass,
    without_scaffolding,
)

TRANSCRIPT_HEADER = "(oldest first, one message per line)"
EMPTY_TRANSCRIPT = "(no messages yet)"

_NUMBER_KEYS = ("seq", "turn")
_TEXT_KEYS = ("text", "summary", "notice", "draft", "reason", "content")
_FLAG_KEYS = {"summary": "summary", "notice": "notice"}
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_LINE = re.compile(
    r"^(?:(?P<number>-?\d+)\.|-) (?P<speaker>[^\n]+?)"
    r"(?P<tags>(?: \((?:passed|summary|notice|private to [^()]*)\))*)(?:: (?P<text>.*)|:?)$"
)
_LABEL = re.compile(
    rf"^(?P<name>[^\n:|\[\]{{}}()]{{1,64}}?){POSSESSIVE_LABEL}(?: \([^()\n]*\))?:\s*",
    re.IGNORECASE,
)
_OLD_HEADER = re.compile(r"^\s*\[(?:seq|turn) -?\d+\][^\n]*?:[ \t]*")
_NUMBERED = re.compile(r"^\s*-?\d+\.\s+(?P<name>[^\n:()]{1,64}?)(?: \([^()\n]*\))?:[ \t]*")


#: What ``escape`` writes for each character it changes (one ``str.translate``, at C speed).
_ESCAPE_TABLE = {
    **{ord(char): f"\\u{ord(char):04x}" for char in _LINE_BREAKS},
    ord("\\"): "\\\\",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
}


def escape(text: str) -> str:
    """``text`` on one line: backslashes doubled, line breaks written as escapes."""
    return text.translate(_ESCAPE_TABLE)


_ESCAPES = {"\\": "\\", "n": "\n", "r": "\r"}


def unescape(text: str) -> str:
    """The inverse of ``escape``."""
    return re.sub(
        r"\\(\\|n|r|u[0-9a-f]{4})",
        lambda m: _ESCAPES.get(m[1]) or chr(int(m[1][1:], 16)),
        text,
    )


def transcript_record(
    turn: int, speaker: str, speaker_index: int | None, text: str
) -> dict[str, Any]:
    """The conversation API's record shape (docs/design.md, "The conversation API"): ``{turn, speaker, speaker_index, text}``."""
    return {"turn": turn, "speaker": speaker, "speaker_index": speaker_index, "text": text}


def _one_line(value: Any) -> str:
    return " ".join(str(value).split())


def transcript_line(
    number: Any,
    speaker: str,
    text: str = "",
    *,
    flag: str | None = None,
    passed: bool = False,
    private_to: Any = None,
) -> str:
    """The one renderer of a transcript line: ``N. Speaker (flags): text`` (``- Speaker ...``
    when ``number`` is None; see the module docstring). ``flag`` is ``summary`` or ``notice``;
    a pass with no text is the bare ``N. Speaker (passed)``."""
    head = f"{number}. " if number is not None else "- "
    tags = [flag] if flag else []
    if passed:
        tags.append("passed")
    if private_to:
        names = private_to if isinstance(private_to, list | tuple) else [private_to]
        tags.append("private to " + ", ".join(_one_line(n) for n in names))
    line = head + _one_line(speaker) + "".join(f" ({t})" for t in tags)
    if passed and not text:
        return line
    return f"{line}: {escape(text)}"


class _Event(Protocol):
    """What ``event_line`` reads of an event (``planning.events.RoomEvent``)."""

    @property
    def speaker(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def kind(self) -> str: ...
    @property
    def visible_to(self) -> tuple[str, ...] | None: ...


_EVENT_FLAGS = {"summary": "summary", "system": "notice"}


def event_line(seq: int, event: _Event) -> str:
    """One event of a room's log (or a ``Conversation``'s statement) as its transcript line: a
    pure function of the seq and the event, the same for every viewer (only which events are
    shown differs). A pass shows no text; a summary or a notice is never a pass."""
    flag = _EVENT_FLAGS.get(event.kind)
    passed = flag is None and event.passed
    return transcript_line(
        seq,
        event.speaker,
        "" if passed else event.content,
        flag=flag,
        passed=passed,
        private_to=event.visible_to,
    )


def render_record(record: Mapping[str, Any]) -> str:
    """One message record as one line (``transcript_line``; see the module docstring).

    A record without a speaker (a moderator's reason, a draft) renders as ``key: text``."""
    text_key = next((k for k in _TEXT_KEYS if k in record), None)
    text = "" if text_key is None or record[text_key] is None else str(record[text_key])
    if "speaker" not in record:
        return f"{text_key or 'message'}: {escape(text)}"
    number_key = next((k for k in _NUMBER_KEYS if k in record), None)
    return transcript_line(
        record[number_key] if number_key is not None else None,
        record["speaker"],
        text,
        flag=_FLAG_KEYS.get(text_key or ""),
        passed=bool(record.get("passed")),
        private_to=record.get("private_to"),
    )


def render_transcript(records: Iterable[Mapping[str, Any]], *, header: bool = True) -> str:
    """The whole transcript, with a header line that explains the format."""
    return render_lines([render_record(r) for r in records], header=header)


def render_lines(lines: Sequence[str], *, header: bool = True) -> str:
    """``render_transcript`` from records already rendered with ``render_record``."""
    if not lines:
        return EMPTY_TRANSCRIPT
    return "\n".join([TRANSCRIPT_HEADER, *lines] if header else lines)


def parse_transcript(text: str) -> list[dict[str, Any]]:
    """The inverse of ``render_transcript``: ``{seq, turn, speaker, text|summary|notice,
    passed?, private_to?}`` per message line (the number under both keys, none for an unnumbered
    ``- Speaker: text`` line; other lines are skipped)."""
    return [record for _, _, record in message_spans(text)]


def message_spans(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """``(start, end, record)`` of every message line in ``text`` (character offsets),
    for readers that cut messages out of a prompt."""
    spans: list[tuple[int, int, dict[str, Any]]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        match = _LINE.match(bare)
        if match:
            record: dict[str, Any] = {}
            if match["number"] is not None:
                record["seq"] = record["turn"] = int(match["number"])
            record["speaker"] = match["speaker"]
            text_key = "text"
            for tag in re.findall(r" \(([^()]*)\)", match["tags"] or ""):
                if tag == "passed":
                    record["passed"] = True
                elif tag in ("summary", "notice"):
                    text_key = tag
                elif tag.startswith("private to "):
                    record["private_to"] = tag.removeprefix("private to ").split(", ")
            if match["text"] is not None or not record.get("passed"):
                record[text_key] = unescape(match["text"] or "")
            spans.append((offset, offset + len(bare), record))
        offset += len(line)
    return spans


def speakers(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The speaker of each record, in order."""
    return [str(r["speaker"]) for r in records]


def strip_echo(reply: str, names: Iterable[str], roster: Iterable[str] = ()) -> str:
    """``reply`` without what a model copied from its prompt or made up (``text.scaffolding``):
    every sentence of the prompt's instructions; at the start, a ``N. Name:`` line label or a
    ``Name:`` label of one of ``names`` (the speaker), an old-style JSON record or ``[seq N]
    Name:`` header (a record's text is kept when nothing else is), and quotes wrapping the whole
    reply; and from the first line that opens a turn of another member of ``roster`` (``Bob:
    ...``, ``3. Bob: ...``: a turn the model made up) to the end, so a reply that *is* another
    member's turn leaves nothing; and every line that only says a member passed ("The seller
    passed.": how a pass is shown to a chat model). Other text is kept as written."""
    own = list(names)
    known = {name_key(n) for n in own}
    members = [*own, *roster]
    text = without_scaffolding(reply.strip())
    for _ in range(8):  # a few layers at most: "3. Alice: Alice: ..."
        before = text
        text = _OLD_HEADER.sub("", text, count=1).lstrip()
        numbered = _NUMBERED.match(text)
        if numbered and name_key(numbered["name"]) in known:
            text = text[numbered.end() :].lstrip()
        match = _LABEL.match(text)
        if match and name_key(match["name"]) in known:
            text = text[match.end() :].lstrip()
        first, _, rest = text.partition("\n")
        record = _json_record(first)
        if record is not None:
            text = rest.strip() or record
        if len(text) >= 2 and text[0] == text[-1] == '"' and text.count('"') == 2:
            text = text[1:-1].strip()
        if text == before:
            break
    cut = made_up_turn_at(text, own, members)
    if cut is not None:
        text = "\n".join(text.splitlines()[:cut]).rstrip()
    if "passed" in text.casefold():  # "The seller passed.": the chat shape's pass, copied
        text = "\n".join(t for t in text.splitlines() if not narrates_a_pass(t, members)).strip()
    return text


def _json_record(line: str) -> str | None:
    """The text of a copied JSON message record, or None when ``line`` is not one."""
    line = line.strip()
    if not (line.startswith("{") and line.endswith("}")):
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or "speaker" not in data:
        return None
    value = next((data[k] for k in _TEXT_KEYS if isinstance(data.get(k), str)), "")
    return str(value).strip()


def echoes(reply: str, names: Iterable[str]) -> bool:
    """True when ``reply`` copies transcript structure (for measuring): a JSON message record,
    a ``[seq N] Name:`` header, a ``N. Name:`` message line or quoted ``| `` lines, or a line
    opening with a speaker's ``Name:`` label."""
    known = {n.casefold() for n in names}
    if re.search(r'"(?:speaker|seq|turn)"\s*:', reply):
        return True  # a JSON record, even spread over lines
    for line in reply.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if _OLD_HEADER.match(stripped) or _json_record(stripped) is not None:
            return True
        if stripped.startswith('{"') and '"speaker"' in stripped:
            return True
        if stripped.startswith("| ") or stripped == "|":
            return True
        numbered = _NUMBERED.match(stripped)
        if numbered and numbered["name"].strip().casefold() in known:
            return True
        match = _LABEL.match(stripped)
        if match and match["name"].strip().casefold() in known:
            return True
    return False


__all__ = [
    "TRANSCRIPT_HEADER",
    "EMPTY_TRANSCRIPT",
    "echoes",
    "escape",
    "unescape",
    "transcript_record",
    "render_record",
    "transcript_line",
    "event_line",
    "render_transcript",
    "render_lines",
    "parse_transcript",
    "message_spans",
    "speakers",
    "strip_echo",
]
