"""``TurnKind.HAND``: in a room with ``agent_rules`` (``rooms/agent_rules.py``), an agent's turn
starts with its hand: raised or not.

- A rule of the room keeps it down (a cap reached, its own message last, another agent already
  answered the person's message): the turn is a pass with that decision, and no model is asked.
- With ``hand_raising``, one call decides and drafts: the agent is asked for a JSON object
  ``{"should_respond", "reason", "ready_to_end", "message"}``. Yes: its ``message`` is the
  turn's; no: a pass. Either way the decision is stored with the turn (``data["decision"]``),
  shown on the Room page and exported. A reply that is not such an object is the message itself
  (the agent spoke without deciding; its decision says so).

Claimed before ``SPEAK`` whenever a rule applies; otherwise the turn is an ordinary ``SPEAK``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, ClassVar

import storage
from conversation import models
from conversation.models.bindings import ModelCache
from conversation.rooms.agent_rules import held_because
from conversation.rooms.config import RoomConfig, agent_rules_of
from conversation.rooms.engine.kinds.base import ClaimContext, TurnHandler
from conversation.rooms.engine.kinds.showing import Form, Shown, speaking_shown
from conversation.rooms.engine.records import Call, Plan, Reply
from conversation.rooms.prompt import TurnPrompt, build_turn_prompt, is_pass, room_template
from conversation.termination.state import RoomState
from conversation.vocabulary import EventKind, RoomStatus, TurnEntry, TurnKind, TurnState

#: What the agent is asked to answer with when it decides (appended to its turn's prompt).
HAND_INSTRUCTION = (
    "\n\nBefore you speak, decide whether you should: answer only with a JSON object "
    '{"should_respond": true or false, "reason": "a few words", "ready_to_end": true or false, '
    '"message": "what you say, or empty"}. Stay silent (should_respond false) when a reply from '
    "you adds nothing. ready_to_end: the conversation has done its job."
)
MAX_REASON_CHARS = 300
#: Who decided: the agent's model, or a rule of the room (no call).
BY_MODEL = "model"
BY_RULE = "rule"


class HandTurn(TurnHandler):
    kind: ClassVar[TurnKind] = TurnKind.HAND

    def claim(self, ctx: ClaimContext) -> Plan | None:
        """Due when the room has agent rules and one applies to the planned speaker: a rule
        keeps its hand down, or it decides first (``hand_raising``)."""
        setting = ctx.config.agent_rules
        if not setting:
            return None
        planned = ctx.planned
        speaker = ctx.config.spec(planned.speaker).name
        held = held_because(ctx.config.names, setting, ctx.view.events, speaker)
        if held is None and not agent_rules_of(setting).hand_raising:
            return None
        data: dict[str, Any] = {"event": TurnKind.HAND, "chosen_because": ctx.because}
        if held is not None:
            data["held"] = held
        prompt = _prompt(ctx.config, ctx.view, speaker, held=held is not None)
        return ctx.claim(speaker, planned.round, prompt, data, model=ctx.label(speaker))

    def prompt(self, config: RoomConfig, before: RoomState, turn: Any) -> TurnPrompt:
        held = bool((turn.data or {}).get("held"))
        return _prompt(config, before, turn.speaker, held=held)

    def show(self, turn: TurnEntry) -> Shown:
        """A hand kept down: one line with its reason; a message: the bubble, its reason in
        its caption."""
        decision = turn.decision or {}
        reason = str(decision.get("reason") or "")
        if turn.is_done and turn.passed:
            return Shown(
                Form.NOTE, f"{{}} stayed silent (#{turn.seq}): {{}}", (turn.speaker, reason)
            )
        shown = speaking_shown(turn)
        if turn.is_message and reason:
            return replace(shown, line=shown.line + " · {}", texts=(*shown.texts, reason))
        return shown

    async def ask(self, call: Call, cache: ModelCache) -> Reply:
        """No call for a hand a rule keeps down; else one call that decides and drafts."""
        held = (call.turn.data or {}).get("held")
        if held:
            return Reply(_no_call(call), 0)
        return await super().ask(call, cache)

    def commit(self, call: Call, outcome: Reply, base: dict[str, Any]) -> storage.TurnCommit:
        """A message with the agent's decision, or a pass with it (in a moderated room the
        message is a draft that waits, as a speaking turn's)."""
        held = (call.turn.data or {}).get("held")
        if held:
            decision = {"should_respond": False, "reason": held, "ready_to_end": False}
            decision["by"] = BY_RULE
            text = ""
        else:
            decision, text = read_decision(outcome.reply.text)
        speaks = bool(decision["should_respond"]) and bool(text) and not is_pass(text)
        draft = speaks and call.config.moderated
        return storage.TurnCommit(
            **base,
            state=TurnState.WAITING if draft else TurnState.DONE,
            kind=EventKind.AGENT if speaks else EventKind.PASS,
            content=text if speaks else "",
            room_status=RoomStatus.WAITING if draft else None,
            data={"decision": decision},
        )


def _prompt(config: RoomConfig, before: RoomState, speaker: str, *, held: bool) -> TurnPrompt:
    """The speaking prompt, and the decision's instruction (none for a hand a rule held: it
    is never asked)."""
    prompt = build_turn_prompt(config, before, speaker, template=room_template(config))
    if held:
        return prompt
    return replace(prompt, user_prompt=prompt.user_prompt + HAND_INSTRUCTION)


def read_decision(text: str) -> tuple[dict[str, Any], str]:
    """``(decision, message)`` from a reply: the JSON object it holds, or (no object) the
    whole reply as a message the agent chose to say."""
    found = _json_object(text)
    if found is None:
        reason = "the reply held no decision: it is the message"
        return {"should_respond": True, "reason": reason, "ready_to_end": False, "by": BY_MODEL}, (
            text.strip()
        )
    message = found.get("message")
    message = message.strip() if isinstance(message, str) else ""
    should = found.get("should_respond")
    decision = {
        "should_respond": should if isinstance(should, bool) else bool(message),
        "reason": str(found.get("reason") or "")[:MAX_REASON_CHARS],
        "ready_to_end": found.get("ready_to_end") is True,
        "by": BY_MODEL,
    }
    return decision, message


def _json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (a model may wrap it in prose or a code fence)."""
    start = text.find("{")
    while start != -1:
        try:
            found, _ = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        return found if isinstance(found, dict) else None
    return None


def _no_call(call: Call) -> models.ModelReply:
    """The reply of a turn no model was asked for (a hand a rule kept down)."""
    return models.ModelReply(
        text="",
        model_name=str(call.turn.model or call.turn.speaker),
        input_tokens=None,
        output_tokens=None,
        cost=None,
        cache_used=False,
        cache_key=None,
        latency=0.0,
        raw=None,
    )


__all__ = ["HAND_INSTRUCTION", "HandTurn", "read_decision"]
