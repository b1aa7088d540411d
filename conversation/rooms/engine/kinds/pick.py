"""``TurnKind.PICK``: a coordinator agent's turn is to pick who speaks next (coordinator-before).
The pick is stored with the turn, so a replay reads it and never asks again; a pick outside the
eligible set fails the turn (never silently replaced)."""

from __future__ import annotations

from typing import Any, ClassVar

import storage
from conversation.planning.coordinator import InvalidPickError, parse_pick
from conversation.rooms.config import RoomConfig
from conversation.rooms.engine.kinds.base import ClaimContext, TurnHandler
from conversation.rooms.engine.kinds.showing import Form, Shown
from conversation.rooms.engine.records import Call, Plan, Reply, error_record, failure_reason
from conversation.rooms.prompt import TurnPrompt, build_pick_prompt
from conversation.termination.state import RoomState
from conversation.vocabulary import (
    EventKind,
    LogEntry,
    Notice,
    RoomStatus,
    TurnEntry,
    TurnKind,
    TurnState,
)


class PickTurn(TurnHandler):
    kind: ClassVar[TurnKind] = TurnKind.PICK

    def claim(self, ctx: ClaimContext) -> Plan | None:
        """Due when the planner says the next step is its coordinator agent's pick (the planner
        is asked through ``pick_needed``; a person's @-mention overrides it)."""
        ask = getattr(ctx.planner, "pick_needed", None)
        if ask is None or ctx.planned.mention:
            return None
        eligible = ask(ctx.config.names, ctx.view.events)
        if eligible is None:
            return None
        speaker = ctx.config.spec(ctx.planned.speaker).name
        prompt = build_pick_prompt(ctx.config, ctx.view, speaker, eligible)
        data = {"event": TurnKind.PICK, "eligible": list(eligible)}
        return ctx.claim(speaker, ctx.planned.round, prompt, data, model=ctx.label(speaker))

    def prompt(self, config: RoomConfig, before: RoomState, turn: Any) -> TurnPrompt:
        eligible = (turn.data or {}).get("eligible", [])
        return build_pick_prompt(config, before, turn.speaker, eligible)

    def show(self, turn: TurnEntry) -> Shown:
        """A pick made: one line naming whom it picked; else as any turn (running, failed...)."""
        return _picked(turn) if turn.is_done else super().show(turn)

    def show_notice(self, notice: Notice) -> Shown:
        """A pick recorded as a notice (an import's, or a coordinator's before it was a turn)."""
        return _picked(notice)

    def commit(self, call: Call, outcome: Reply, base: dict[str, Any]) -> storage.TurnCommit:
        text = outcome.reply.text
        try:
            pick = parse_pick(text, (call.turn.data or {}).get("eligible", []))
        except InvalidPickError as exc:
            record = error_record(exc)
            return storage.TurnCommit(
                **{**base, "error": record},
                state=TurnState.FAILED,
                content=text,
                room_status=RoomStatus.FAILED,
                stop_reason=failure_reason(call.turn, record),
            )
        return storage.TurnCommit(
            **base,
            state=TurnState.DONE,
            kind=EventKind.AGENT,
            content=f"picked {pick}" if pick else "picked no one",
            data={"pick": pick},
        )


def _picked(entry: LogEntry) -> Shown:
    return Shown(
        Form.NOTE, "{} picked {} to speak next.", (entry.speaker, entry.choice or "no one")
    )
