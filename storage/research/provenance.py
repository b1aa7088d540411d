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
- ``chosen_because``: why the planner chose the speaker; ``cache_hit``: the reply came from the
  model cache; ``model``, tokens, ``cost`` (US dollars): the turn's usage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from vocabulary import TurnKind, kind_of

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
    "cache_hit",
    "model",
    "input_tokens",
    "output_tokens",
    "cost",
    "created_at",
    "updated_at",
]
"""The columns every export carries, in this order."""

_CONSUMED = frozenset({"stopped", "abandoned", "failed"})


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


def actor(kind: str, speaker: str, data: Mapping[str, Any]) -> str | None:
    """Who did the human act recorded by an event (see the module doc), or ``None``."""
    if kind == "human":
        return str(data.get("by") or speaker)
    decisions = data.get("decisions") or []
    if decisions and isinstance(decisions[-1], Mapping) and decisions[-1].get("by"):
        return str(decisions[-1]["by"])
    if data.get("by"):
        return str(data["by"])
    return None


def _picked_by(speaker: str, data: Mapping[str, Any]) -> str | None:
    """Who chose the speaker: a coordinator-after turn's picker, or the coordinator agent whose
    own turn was a pick (coordinator-before)."""
    if data.get("picked_by"):
        return str(data["picked_by"])
    if kind_of(data) == TurnKind.PICK:
        return speaker
    return None


def provenance_row(event: Any, *, times_as_text: bool = True) -> dict[str, Any]:
    """The :data:`PROVENANCE_COLUMNS` of one stored event (a row of the events table, or any
    object with its attributes). ``times_as_text=False`` keeps the timestamps as datetimes (for
    a DataFrame, which would parse the text again)."""
    raw = getattr(event, "data", None)
    data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    kind, state = event.kind, event.state
    denials = [d for d in data.get("denials") or [] if isinstance(d, Mapping)]
    candidates = [c for c in data.get("candidates") or [] if isinstance(c, Mapping)]
    decisions = [
        {"verb": d.get("verb"), "by": d.get("by"), "at": d.get("at")}
        for d in data.get("decisions") or []
        if isinstance(d, Mapping)
    ]
    edited = data.get("draft") is not None and bool(data.get("edited"))
    passed = None
    if kind in ("agent", "pass"):
        turn_kind = kind_of(data)
        no_pick = (
            turn_kind == TurnKind.CANDIDATES and "picked" in data and not data["picked"]
        ) or (turn_kind == TurnKind.PICK and state == "done" and not data.get("pick"))
        passed = kind == "pass" or state in _CONSUMED or no_pick
    cache_hit = data.get("cache_hit")
    return {
        "room_id": event.room_id,
        "seq": event.seq,
        "event_id": event.id,
        "kind": kind,
        "speaker": event.speaker,
        "state": state,
        "private_to": json_list(event.visible_to),
        "actor": actor(kind, event.speaker, data),
        "decisions": json_list(decisions),
        "edited_from": str(data["draft"]) if edited else None,
        "edited_by": str(data.get("edited_by")) if edited and data.get("edited_by") else None,
        "denied_drafts": json_list([str(d.get("draft", "")) for d in denials]),
        "denial_reasons": json_list([str(d.get("reason", "")) for d in denials]),
        "passed": passed,
        "picked_by": _picked_by(event.speaker, data),
        "rejected_candidates": json_list(
            [
                {"speaker": c.get("speaker"), "text": c.get("text")}
                for c in candidates
                if not c.get("chosen") and not c.get("passed")
            ]
        ),
        "chosen_because": str(data["chosen_because"]) if data.get("chosen_because") else None,
        "cache_hit": bool(cache_hit) if cache_hit is not None else None,
        "model": event.model,
        "input_tokens": event.input_tokens,
        "output_tokens": event.output_tokens,
        "cost": event.cost,
        "created_at": iso(event.created_at) if times_as_text else event.created_at,
        "updated_at": iso(event.updated_at) if times_as_text else event.updated_at,
    }


__all__ = ["PROVENANCE_COLUMNS", "actor", "iso", "json_list", "provenance_row"]
