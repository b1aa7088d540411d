"""The pure commit mapping: a model reply becomes its turn's fenced ``TurnCommit``, by the
handler of the turn's kind (a message, a pass, a draft that waits, a pick, a summary)."""

from __future__ import annotations

import dataclasses
from typing import Any

import storage
from conversation.rooms.engine.records import Call, Reply
from conversation.text.copies import NearCopy
from conversation.vocabulary import EventKind


def commit_for(call: Call, outcome: Reply) -> storage.TurnCommit:
    """The fenced commit of ``outcome`` for ``call``'s turn; ``data["cache_hit"]`` says whether
    the answer came from the model cache, ``data["raw_reply"]`` what the model sent when
    stripping changed it (``text.transcript.strip_echo``), ``data["pass_reason"]`` why the
    engine stored a pass (``kinds.speak.pass_after_echoes``), ``data["usage_estimated"]`` that
    its token counts are estimates (a streamed reply from a server that sent no usage),
    ``data["near_copy"]`` the recent message a new message nearly copies (``{seq,
    similarity}``)."""
    reply = outcome.reply
    base: dict[str, Any] = {
        "event_id": call.turn.id,
        "token": call.held.token,
        "model": reply.model_name,
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "cost": reply.cost,
        "latency": reply.latency,
        "attempts": outcome.attempts,
        "next_attempt_at": None,
        "error": None,
    }
    commit = call.handler.commit(call, outcome, base)
    data = {**(commit.data or {}), "cache_hit": reply.cache_used}
    if reply.raw_text is not None:  # stripping changed the reply: what the model sent
        data["raw_reply"] = reply.raw_text
    if outcome.note is not None:
        data["pass_reason" if outcome.reply.text == "PASS" else "note"] = outcome.note
    if reply.usage_estimated:  # a streamed reply whose server sent no usage: our estimate
        data["usage_estimated"] = True
    near = _near_copy(call, commit)
    if near is not None:
        data["near_copy"] = near.record()
    return dataclasses.replace(commit, data=data)


def _near_copy(call: Call, commit: storage.TurnCommit) -> NearCopy | None:
    """The recent message a new message (or draft) nearly copies (``text.copies``): kept, and
    flagged on the turn and in Results."""
    guard = call.settings.repeats if call.settings is not None else None
    if guard is None or not commit.content or commit.kind != EventKind.AGENT:
        return None
    return guard.near(commit.content)


__all__ = ["commit_for"]
