"""``TurnKind.SPEAK``: an agent speaks (or passes). Its turn stores no ``event``; in a moderated
room a message is a draft that waits for a person (the room ``waiting`` with it)."""

from __future__ import annotations

from typing import Any, ClassVar

import storage
from conversation import models
from conversation.models.bindings import ModelCache
from conversation.models.chat_shape import CopiedReply, EchoOnlyReply
from conversation.rooms.config import RoomConfig
from conversation.rooms.engine.kinds.base import ClaimContext, TurnHandler
from conversation.rooms.engine.records import Call, Plan, Reply
from conversation.rooms.engine.streaming_call import ask_streamed, stopped_commit, streams
from conversation.rooms.prompt import (
    TurnPrompt,
    build_turn_prompt,
    denial_feedback,
    is_pass,
    room_template,
    turn_prompt,
)
from conversation.termination.state import RoomState
from conversation.vocabulary import EventKind, RoomStatus, TurnKind, TurnState


class SpeakTurn(TurnHandler):
    kind: ClassVar[TurnKind] = TurnKind.SPEAK
    may_stream: ClassVar[bool] = True

    def claim(self, ctx: ClaimContext) -> Plan:
        """Always due: the planner's speaker speaks (the last kind the registry asks)."""
        planned = ctx.planned
        speaker = planned.speaker
        settings = ctx.rules.call_settings(speaker)
        prompt = turn_prompt(
            ctx.rules.frame(speaker),
            ctx.view,
            settings.prompt_budget,
            addressee=planned.addressee,
        )
        data: dict[str, Any] = {"chosen_because": ctx.because}
        if planned.addressee is not None:
            data["addressee"] = planned.addressee
        return ctx.claim(
            speaker, planned.round, prompt, data, model=ctx.label(speaker), settings=settings
        )

    def prompt(self, config: RoomConfig, before: RoomState, turn: Any) -> TurnPrompt:
        """The same prompt, with the feedback of every denial of its drafts so far."""
        data = turn.data or {}
        return build_turn_prompt(
            config,
            before,
            turn.speaker,
            template=room_template(config),
            feedback=denial_feedback(data.get("denials", [])),
            addressee=data.get("addressee"),
        )

    async def ask(self, call: Call, cache: ModelCache) -> Reply:
        """Streamed when the room and the model allow it (``engine.streaming_call``)."""
        if streams(call):
            return await ask_streamed(call)
        return await super().ask(call, cache)

    def commit(self, call: Call, outcome: Reply, base: dict[str, Any]) -> storage.TurnCommit:
        """A pass, a message, or (moderated) a draft that waits with the room; a reply stopped
        while it streamed is a denial."""
        if outcome.stopped_by is not None:
            return stopped_commit(call, outcome, base)
        text = outcome.reply.text
        passed = is_pass(text)
        draft = call.config.moderated and not passed
        return storage.TurnCommit(
            **base,
            state=TurnState.WAITING if draft else TurnState.DONE,
            kind=EventKind.PASS if passed else EventKind.AGENT,
            content="" if passed else text,
            room_status=RoomStatus.WAITING if draft else None,
        )


def pass_after_echoes(call: Call, exc: EchoOnlyReply, attempts: int) -> Reply:
    """The pass stored when every try of a turn replied only with scaffolding or others' made-up
    turns (``chat_shape.EchoOnlyReply``), or copied an earlier message (``CopiedReply``): the
    reason and the last raw reply go in its details."""
    reply = models.ModelReply(
        text="PASS",
        model_name=str(call.turn.model or call.turn.speaker),
        input_tokens=None,
        output_tokens=None,
        cost=None,
        cache_used=False,
        cache_key=None,
        latency=0.0,
        raw=None,
        raw_text=exc.raw_text,
    )
    if isinstance(exc, CopiedReply):
        reason = (
            f"stored as a pass: all {attempts} tries copied an earlier message or a stopped "
            f"draft word for word instead of writing a new one (the last copied {exc.copied})"
        )
    else:
        reason = (
            f"stored as a pass: all {attempts} tries replied only with the prompt's "
            "instructions or other speakers' made-up turns"
        )
    return Reply(reply, attempts, note=reason)
