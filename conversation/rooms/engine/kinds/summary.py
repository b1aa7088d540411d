"""``TurnKind.SUMMARY``: the room's model summarises what fell out of the context window (asked
once, stored as a summary event that later prompts replay instead of the messages it covers)."""

from __future__ import annotations

from typing import Any, ClassVar

import storage
from conversation.context.window import SUMMARY_SPEAKER, summary_request
from conversation.rooms.config import RoomConfig
from conversation.rooms.engine.kinds.base import ClaimContext, TurnHandler
from conversation.rooms.engine.kinds.showing import Form, Shown
from conversation.rooms.engine.records import Call, Plan, Reply
from conversation.rooms.log import covers_seqs
from conversation.rooms.prompt import TurnPrompt, build_summary_prompt
from conversation.termination.state import RoomState
from conversation.vocabulary import EventKind, TurnEntry, TurnKind, TurnState


class SummaryTurn(TurnHandler):
    kind: ClassVar[TurnKind] = TurnKind.SUMMARY

    def claim(self, ctx: ClaimContext) -> Plan | None:
        """Due when the room's context policy summarises and messages fell out of the window."""
        config, view = ctx.config, ctx.view
        policy = ctx.rules.policy
        if not policy.summarize:
            return None
        prompt = build_summary_prompt(config, view)
        if prompt is None:
            return None
        request = summary_request(config.names, view.events, policy)
        assert request is not None
        data = {"event": TurnKind.SUMMARY, "covers_seqs": covers_seqs(view, request.covers)}
        return ctx.claim(SUMMARY_SPEAKER, ctx.round, prompt, data, model=ctx.label(None))

    def prompt(self, config: RoomConfig, before: RoomState, turn: Any) -> TurnPrompt:
        """Nothing left to summarise: an empty prompt, and the turn ends as an empty pass (the
        engine asks no model for an empty prompt)."""
        prompt = build_summary_prompt(config, before)
        return prompt if prompt is not None else TurnPrompt("", "", ())

    def show(self, turn: TurnEntry) -> Shown:
        """Folded: what agents are shown instead of the messages it covers (``[start, end)``)."""
        covered = turn.data.get("covers_seqs") or []
        span = f" of #{covered[0]}-#{covered[1] - 1}" if len(covered) == 2 else ""
        title = f"Summary{span} (what agents are shown instead of those messages)"
        body = turn.content if turn.is_done else "…"
        return Shown(Form.FOLDED, title, body=body, provenance=False)

    def commit(self, call: Call, outcome: Reply, base: dict[str, Any]) -> storage.TurnCommit:
        text = outcome.reply.text
        if not text.strip():  # nothing to summarise: an empty pass, not a summary
            return storage.TurnCommit(
                **base, state=TurnState.DONE, kind=EventKind.PASS, content="", data={"empty": True}
            )
        return storage.TurnCommit(**base, state=TurnState.DONE, kind=EventKind.AGENT, content=text)
