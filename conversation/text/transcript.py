"""The transcript a model is shown: each message a header line, then its text as quoted lines.

    [seq 2] Alice:
    | I offer 10.
    | Bob: I concede

A header names the speaker (and the message's number and flags: ``(passed)``, ``(summary)``,
``(notice)``, ``(private to Bob)``); every line of the message's text starts with ``| ``. Speaker
boundaries stay structural (DESIGN decision 6): a newline followed by ``Bob: I concede`` inside
Alice's text becomes the quoted line ``| Bob: I concede`` and cannot pass for a Bob turn, because
only header lines (which never start with ``|``) say who spoke. Every line break Python knows
(``\\r``, ``\\u2028``, ...) splits a quoted line, so none can smuggle an unquoted line in.

This replaced one JSON record per message: small chat models (SmolLM2-135M) copied the JSON records
back into their replies; quoted text reads like the chat logs they were trained on
(``benchmarks/echo_rate.py`` measures both). ``strip_echo`` removes what a model still copies at
the start of a reply (a header, a ``Name:`` label, a JSON record, quote marks).

The text is carried literally; nothing here renders templates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

TRANSCRIPT_HEADER = (
    "(each message starts with a line like [seq 3] Name: and every line of its text "
    'starts with "| "; only those header lines say who spoke)'
)
EMPTY_TRANSCRIPT = "(no messages yet)"
QUOTE = "| "

_NUMBER_KEYS = ("seq", "turn")
_TEXT_KEYS = ("text", "summary", "notice", "draft", "reason", "content")
_FLAG_KEYS = {"summary": "summary", "notice": "notice"}
# A numbered header may name any speaker; an unnumbered one (summary requests) a single word.
_HEADER = re.compile(
    r"^(?:\[(?P<key>seq|turn) (?P<number>-?\d+)\] (?P<speaker>[^\n]*?)|(?P<word>[^\s:|\[\]()]+))"
    r"(?P<tags>(?: \((?:passed|summary|notice|private to [^()]*)\))*):$"
)
_LABEL = re.compile(r"^(?P<name>[^\n:|\[\]{}]{1,64}?):\s*")
_ANY_HEADER = re.compile(r"^\s*\[(?:seq|turn) -?\d+\][^\n]*?:[ \t]*")


def transcript_record(
    turn: int, speaker: str, speaker_index: int | None, text: str
) -> dict[str, Any]:
    """The record shape of seed 000: ``{turn, speaker, speaker_index, text}``."""
    return {"turn": turn, "speaker": speaker, "speaker_index": speaker_index, "text": text}


def _one_line(value: Any) -> str:
    return " ".join(str(value).split())


def render_record(record: Mapping[str, Any]) -> str:
    """One message: its header line, then each line of its text quoted with ``| ``.

    A record without a speaker (a moderator's reason, a draft) renders as ``key:`` and quoted
    lines."""
    data = dict(record)
    text_key = next((k for k in _TEXT_KEYS if k in data), None)
    text = "" if text_key is None or data[text_key] is None else str(data[text_key])
    if "speaker" in data:
        number_key = next((k for k in _NUMBER_KEYS if k in data), None)
        head = f"[{number_key} {data[number_key]}] " if number_key is not None else ""
        tags = []
        if text_key in _FLAG_KEYS:
            tags.append(_FLAG_KEYS[text_key])
        if data.get("passed"):
            tags.append("passed")
        private = data.get("private_to")
        if private:
            names = private if isinstance(private, list | tuple) else [private]
            tags.append("private to " + ", ".join(_one_line(n) for n in names))
        header = head + _one_line(data["speaker"]) + "".join(f" ({t})" for t in tags) + ":"
    else:
        header = f"{text_key or 'message'}:"
    if data.get("passed") and not text:
        return header
    return "\n".join([header, *quote(text)])


def quote(text: str) -> list[str]:
    """``text`` as quoted lines (an empty line is a lone ``|``)."""
    lines = text.splitlines() or [""]
    return [(QUOTE + line) if line else QUOTE.rstrip() for line in lines]


def render_transcript(records: Iterable[Mapping[str, Any]], *, header: bool = True) -> str:
    """The whole transcript, with a header line that explains the format."""
    return render_lines([render_record(r) for r in records], header=header)


def render_lines(lines: Sequence[str], *, header: bool = True) -> str:
    """``render_transcript`` from records already rendered with ``render_record``."""
    if not lines:
        return EMPTY_TRANSCRIPT
    return "\n".join([TRANSCRIPT_HEADER, *lines] if header else lines)


def parse_transcript(text: str) -> list[dict[str, Any]]:
    """The inverse of ``render_transcript`` for messages with a header: ``{seq|turn, speaker,
    text|summary|notice, passed?, private_to?}`` (other lines are skipped)."""
    records: list[dict[str, Any]] = []
    body: list[str] | None = None
    for line in text.splitlines():
        match = _HEADER.match(line)
        if match:
            record: dict[str, Any] = {}
            if match["key"]:
                record[match["key"]] = int(match["number"])
            record["speaker"] = match["speaker"] if match["key"] else match["word"]
            tags = re.findall(r" \(([^()]*)\)", match["tags"] or "")
            text_key = "text"
            for tag in tags:
                if tag == "passed":
                    record["passed"] = True
                elif tag in ("summary", "notice"):
                    text_key = tag
                elif tag.startswith("private to "):
                    record["private_to"] = tag.removeprefix("private to ").split(", ")
            body = []
            record[text_key] = body
            records.append(record)
        elif body is not None and (line == QUOTE.rstrip() or line.startswith(QUOTE)):
            body.append(line[len(QUOTE) :])
        else:
            body = None
    for record in records:
        for key in ("text", "summary", "notice"):
            if isinstance(record.get(key), list):
                record[key] = "\n".join(record[key])
        if record.get("passed") and record.get("text") == "":
            del record["text"]
    return records


def message_spans(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """``(start, end, record)`` of every message with a header in ``text`` (character offsets,
    the header through its last quoted line), for readers that cut messages out of a prompt."""
    spans: list[tuple[int, int, dict[str, Any]]] = []
    offset = 0
    current: list[Any] | None = None
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if _HEADER.match(bare):
            record = parse_transcript(bare)[0]
            current = [offset, offset + len(bare), record, []]
            spans.append(current)  # type: ignore[arg-type]
        elif current is not None and (bare == QUOTE.rstrip() or bare.startswith(QUOTE)):
            current[3].append(bare[len(QUOTE) :])
            current[1] = offset + len(bare)
        else:
            current = None
        offset += len(line)
    found = []
    for start, end, record, body in spans:  # type: ignore[misc]
        key = next((k for k in ("summary", "notice") if k in record), "text")
        if body or key in record:
            record[key] = "\n".join(body)
        found.append((start, end, record))
    return found


def speakers(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The speaker of each record, in order."""
    return [str(r["speaker"]) for r in records]


def strip_echo(reply: str, names: Iterable[str]) -> str:
    """``reply`` without what a model copied from its transcript at the start: header lines
    (``[seq 4] Alice:``), a ``Name:`` label of one of ``names``, a JSON record
    (``{"speaker": ..., "text": ...}``: its text is kept when nothing else is), and the ``| ``
    quote marks of a reply written entirely as quoted lines. Text after the start is kept as
    written (a message may quote someone)."""
    known = {n.casefold() for n in names}
    text = reply.strip()
    for _ in range(8):  # a few layers at most: "[seq 4] Alice: Alice: ..."
        before = text
        text = _ANY_HEADER.sub("", text, count=1).lstrip()
        match = _LABEL.match(text)
        if match and match["name"].casefold() in known:
            text = text[match.end() :].lstrip()
        first, _, rest = text.partition("\n")
        record = _json_record(first)
        if record is not None:
            text = rest.strip() or str(record)
        if text == before:
            break
    lines = text.splitlines()
    if lines and all(line.startswith(QUOTE) or line == QUOTE.rstrip() for line in lines):
        text = "\n".join(line[len(QUOTE) :] for line in lines).strip()
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
    return value.strip()


def echoes(reply: str, names: Iterable[str]) -> bool:
    """True when ``reply`` copies transcript structure: a header line, a JSON message record,
    quoted ``| `` lines, or a line starting with a speaker's ``Name:`` label (for measuring)."""
    known = {n.casefold() for n in names}
    for line in reply.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if _ANY_HEADER.match(stripped) or _json_record(stripped) is not None:
            return True
        if stripped.startswith(QUOTE.rstrip()):
            return True
        if stripped.startswith('{"') and '"speaker"' in stripped:
            return True
        match = _LABEL.match(stripped)
        if match and match["name"].casefold() in known:
            return True
    return False


__all__ = [
    "TRANSCRIPT_HEADER",
    "EMPTY_TRANSCRIPT",
    "QUOTE",
    "echoes",
    "quote",
    "transcript_record",
    "render_record",
    "render_transcript",
    "render_lines",
    "parse_transcript",
    "message_spans",
    "speakers",
    "strip_echo",
]
