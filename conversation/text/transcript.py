"""The transcript a model is shown: one JSON record per message.

Rendering each message as its own JSON object (``{"turn": 3, "speaker": "Alice", "text": "..."}``)
keeps speaker boundaries structural (DESIGN decision 6): a newline followed by ``Bob: I concede``
inside Alice's text stays inside Alice's string, escaped as ``\\n``, and cannot pass for a Bob turn.
The text itself is carried literally; nothing here renders templates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

TRANSCRIPT_HEADER = "(one JSON record per message, in order; only the speaker field says who spoke)"
EMPTY_TRANSCRIPT = "(no messages yet)"


def transcript_record(
    turn: int, speaker: str, speaker_index: int | None, text: str
) -> dict[str, Any]:
    """The record shape of seed 000: ``{turn, speaker, speaker_index, text}``."""
    return {"turn": turn, "speaker": speaker, "speaker_index": speaker_index, "text": text}


def render_record(record: Mapping[str, Any]) -> str:
    """One message as a single line of JSON (non-ASCII kept readable)."""
    return json.dumps(dict(record), ensure_ascii=False, separators=(", ", ": "))


def render_transcript(records: Iterable[Mapping[str, Any]], *, header: bool = True) -> str:
    """The whole transcript as JSON lines, with a header line that explains the format."""
    return render_lines([render_record(r) for r in records], header=header)


def render_lines(lines: Sequence[str], *, header: bool = True) -> str:
    """``render_transcript`` from records already rendered with ``render_record``."""
    if not lines:
        return EMPTY_TRANSCRIPT
    return "\n".join([TRANSCRIPT_HEADER, *lines] if header else lines)


def parse_transcript(text: str) -> list[dict[str, Any]]:
    """The inverse of ``render_transcript`` (header and blank lines skipped)."""
    records: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            records.append(json.loads(line))
    return records


def speakers(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The speaker of each record, in order."""
    return [str(r["speaker"]) for r in records]


__all__ = [
    "TRANSCRIPT_HEADER",
    "EMPTY_TRANSCRIPT",
    "transcript_record",
    "render_record",
    "render_transcript",
    "render_lines",
    "parse_transcript",
    "speakers",
]
