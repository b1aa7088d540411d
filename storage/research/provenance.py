"""The provenance columns of an event: one definition for every export.

The room CSV and the Results events CSV (:func:`storage.research.frames.events_frame`), the JSON export
(each event's ``provenance`` object) and the EDSL ``Results`` export (each result's scenario) all
carry exactly :data:`PROVENANCE_COLUMNS`, computed here by :func:`provenance_row` from the stored
event alone, so the same event reads the same everywhere. No pandas: worker processes may import
this.

Values are flat (text, numbers, booleans, ``None``): lists are JSON arrays as text
(``'["Ana"]'``), timestamps ISO 8601 in UTC. Where each value comes from:

- ``private_to``: the event's ``visible_to`` (a private message, and to whom);
- ``actor``: who did the human act: a person's message's ``data.by`` (else the speaker); a turn's
  last moderation decision (``data.decisions``: approve, edit, deny, pick, stop...); a system
  event's ``data.by`` (pause, resume, stop, fork, settings); ``None`` when no person acted;
- ``decisions``: every ``{"verb", "by", "at"}`` a person recorded on a turn;
- ``edited_from`` / ``edited_by``: the original draft of a moderator's edit, and the moderator;
- ``denied_drafts`` / ``denial_reasons``: every denied draft and its reason, in order;
- ``passed``: the turn published nothing (a pass, a skipped/abandoned/failed turn, no pick);
- ``picked_by`` / ``rejected_candidates``: who picked (a coordinator-after turn's picker, or the
  coordinator agent of a pick turn) and the drafts not chosen (``[{"speaker", "text"}]``);
- ``hand_raised`` / ``hand_reason`` / ``ready_to_end`` / ``hand_decided_by``: an agent's
  hand-raising decision stored with its turn (``data.decision``, issue 33): whether it chose to
  speak, its reason, whether it was ready to end, and who decided (``model``, or ``rule``: a rule
  of the room kept its hand down without a call); ``None`` for a turn without one;
- ``chosen_because``: why the planner chose the speaker; ``cache_hit``: the reply came from the
  model cache; ``model``, tokens, ``cost`` (US dollars): the turn's usage.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from vocabulary import entry_of

PROVENANCE_COLUMNS = [
    "room_id",
    "seq",
    "event_id",
    "kind",
    "speaker",
    "state",
    "private_to",
    "actor",
    "decisions",
    "edited_from",
    "edited_by",
    "denied_drafts",
    "denial_reasons",
    "passed",
    "picked_by",
    "rejected_candidates",
    "chosen_because",
    "hand_raised",
    "hand_reason",
    "ready_to_end",
    "hand_decided_by",
    "cache_hit",
    "model",
    "input_tokens",
    "output_tokens",
    "cost",
    "created_at",
    "updated_at",
]
"""The columns every export carries, in this order."""


def json_list(values: Any) -> str | None:
    """A list as JSON text (``None`` when empty or missing): one cell, unambiguous."""
    if not values:
        return None
    return json.dumps(list(values), ensure_ascii=False)


def iso(value: Any) -> str | None:
    """A timestamp as ISO 8601 text (``None`` stays ``None``)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def provenance_row(event: Any, *, times_as_text: bool = True) -> dict[str, Any]:
    """The :data:`PROVENANCE_COLUMNS` of one stored event (a row of the events table, any
    object with its attributes, or its ``vocabulary.LogEntry``). ``times_as_text=False`` keeps
    the timestamps as datetimes (for a DataFrame, which would parse the text again). What the
    event means (who acted, whether it passed, who picked) is its typed entry's."""
    entry = entry_of(event)
    row, data = entry.row, entry.data
    denials, candidates = entry.denials, entry.candidates
    decisions = [
        {"verb": d.get("verb"), "by": d.get("by"), "at": d.get("at")} for d in entry.decisions
    ]
    edited = data.get("draft") is not None and bool(data.get("edited"))
    hand = entry.decision or {}
    cache_hit = data.get("cache_hit")
    return {
        "room_id": row.room_id,
        "seq": entry.seq,
        "event_id": row.id,
        "kind": row.kind,
        "speaker": entry.speaker,
        "state": row.state,
        "private_to": json_list(entry.private_to),
        "actor": entry.by,
        "decisions": json_list(decisions),
        "edited_from": str(data["draft"]) if edited else None,
        "edited_by": str(data.get("edited_by")) if edited and data.get("edited_by") else None,
        "denied_drafts": json_list([str(d.get("draft", "")) for d in denials]),
        "denial_reasons": json_list([str(d.get("reason", "")) for d in denials]),
        "passed": entry.passed if entry.is_turn else None,
        "picked_by": entry.picked_by,
        "rejected_candidates": json_list(
            [
                {"speaker": c.get("speaker"), "text": c.get("text")}
                for c in candidates
                if not c.get("chosen") and not c.get("passed")
            ]
        ),
        "chosen_because": str(data["chosen_because"]) if data.get("chosen_because") else None,
        "hand_raised": bool(hand["should_respond"]) if "should_respond" in hand else None,
        "hand_reason": str(hand["reason"]) if hand.get("reason") else None,
        "ready_to_end": bool(hand["ready_to_end"]) if "ready_to_end" in hand else None,
        "hand_decided_by": str(hand["by"]) if hand.get("by") else None,
        "cache_hit": bool(cache_hit) if cache_hit is not None else None,
        "model": row.model,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "cost": row.cost,
        "created_at": iso(row.created_at) if times_as_text else row.created_at,
        "updated_at": iso(row.updated_at) if times_as_text else row.updated_at,
    }


__all__ = ["PROVENANCE_COLUMNS", "iso", "json_list", "provenance_row"]
