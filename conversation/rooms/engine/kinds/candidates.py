"""``TurnKind.CANDIDATES``: a coordinator-after turn. Every eligible agent drafts (concurrently,
each with its own model), then the coordinator agent's model picks one draft; with no coordinator
agent a person picks (the turn waits, with the room). The chosen draft becomes its agent's
message; every candidate is kept with it (never shown to agents)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

import storage
from conversation import models
from conversation.models.bindings import ModelCache
from conversation.planning.coordinator import parse_pick
from conversation.rooms.config import RoomConfig
from conversation.rooms.engine.kinds.base import ClaimContext, TurnHandler, resumed
from conversation.rooms.engine.records import COORDINATOR_SPEAKER, Call, Drafting, Plan, Reply
from conversation.rooms.prompt import (
    TurnPrompt,
    build_candidates_prompt,
    build_turn_prompt,
    is_pass,
    room_template,
)
from conversation.termination.state import RoomState
from conversation.vocabulary import EventKind, RoomStatus, TurnKind, TurnState


def drafting(
    config: RoomConfig, view: RoomState, planner: Any, drafters: Sequence[str]
) -> Drafting:
    """Every drafter's prompt, and the coordinator agent who picks (None: a person)."""
    template = room_template(config)
    prompts = tuple(
        (name, build_turn_prompt(config, view, name, template=template)) for name in drafters
    )
    coordinator = getattr(planner, "coordinator", None)
    return Drafting(prompts, coordinator if coordinator in config.names else None, view)


class CandidatesTurn(TurnHandler):
    kind: ClassVar[TurnKind] = TurnKind.CANDIDATES

    def claim(self, ctx: ClaimContext) -> Plan | None:
        """Due when the planner names drafters for the next turn (asked through
        ``candidates_needed``; a person's @-mention overrides it)."""
        ask = getattr(ctx.planner, "candidates_needed", None)
        if ask is None or ctx.planned.mention:
            return None
        drafters = ask(ctx.config.names, ctx.view.events)
        if not drafters:
            return None
        drafted = drafting(ctx.config, ctx.view, ctx.planner, drafters)
        return ctx.claim(
            getattr(ctx.planner, "coordinator", None) or COORDINATOR_SPEAKER,
            ctx.planned.round,
            drafted.prompts[0][1],
            {"event": TurnKind.CANDIDATES, "eligible": list(drafters)},
            model=ctx.label(None),
            saw=sorted({s for _, p in drafted.prompts for s in p.saw}),
            drafting=drafted,
        )

    def prompt(self, config: RoomConfig, before: RoomState, turn: Any) -> TurnPrompt:
        """The first drafter's prompt (each drafter is asked its own)."""
        return drafting(config, before, None, (turn.data or {}).get("eligible", [])).prompts[0][1]

    def resume(
        self, config: RoomConfig, before: RoomState, turn: storage.Event, planner: Any
    ) -> Plan:
        drafted = drafting(config, before, planner, (turn.data or {}).get("eligible", []))
        return resumed(config, turn, drafted.prompts[0][1], drafting=drafted)

    async def ask(self, call: Call, cache: ModelCache) -> Reply:
        """Every draft, then the coordinator agent's pick; the reply is the chosen draft, with
        the usage of every call added up."""
        config, drafted = call.config, call.drafting
        assert drafted is not None

        async def draft(name: str, prompt: TurnPrompt) -> models.ModelReply:
            own = config.spec(name).model
            return await models.ask(
                cache.get(own or config.model),
                user_prompt=prompt.user_prompt,
                system_prompt=prompt.system_prompt,
                cache=call.cache,
                iteration=call.iteration,
            )

        replies = await asyncio.gather(*(draft(n, p) for n, p in drafted.prompts))
        candidates: tuple[dict[str, Any], ...] = tuple(
            {"speaker": name, "text": reply.text, "passed": is_pass(reply.text)}
            for (name, _), reply in zip(drafted.prompts, replies, strict=True)
        )
        offered = [c for c in candidates if not c["passed"]]
        calls = list(replies)
        picked: str | None = None
        decided = drafted.coordinator is not None and bool(offered)
        if drafted.coordinator is not None and offered:
            prompt = build_candidates_prompt(config, drafted.view, drafted.coordinator, offered)
            answer = await draft(drafted.coordinator, prompt)
            calls.append(answer)
            picked = parse_pick(answer.text, [c["speaker"] for c in offered])
        names = [n for n, _ in drafted.prompts]
        label = (
            replies[names.index(picked)].model_name if picked is not None else calls[-1].model_name
        )
        chosen = next((c["text"] for c in offered if c["speaker"] == picked), "")
        return Reply(_total(chosen, label, calls), 0, candidates, picked, decided)

    def commit(self, call: Call, outcome: Reply, base: dict[str, Any]) -> storage.TurnCommit:
        """The chosen draft as its agent's message; no one chosen: the activity settles (a pass
        by the coordinator); no pick made yet: the turn waits for a person."""
        candidates = [{**c, "chosen": c["speaker"] == outcome.picked} for c in outcome.candidates]
        if not outcome.decided and any(not c["passed"] for c in candidates):
            return storage.TurnCommit(
                **base,
                state=TurnState.WAITING,
                content="",
                data={"candidates": candidates},
                room_status=RoomStatus.WAITING,
            )
        picked_by = call.drafting.coordinator if call.drafting is not None else None
        if outcome.picked is None:
            return storage.TurnCommit(
                **base,
                state=TurnState.DONE,
                content="",
                data={"candidates": candidates, "picked": None, "picked_by": picked_by},
            )
        return storage.TurnCommit(
            **base,
            state=TurnState.DONE,
            kind=EventKind.AGENT,
            speaker=outcome.picked,
            content=outcome.reply.text,
            data={
                "candidates": candidates,
                "picked": outcome.picked,
                "picked_by": picked_by,
                "chosen_because": f"picked by coordinator from {len(candidates)} drafts",
            },
        )


def _total(text: str, label: str, calls: Sequence[models.ModelReply]) -> models.ModelReply:
    """One reply standing for every call of a drafted turn: the chosen text, usage summed."""
    return models.ModelReply(
        text,
        label,
        sum(r.input_tokens or 0 for r in calls),
        sum(r.output_tokens or 0 for r in calls),
        sum(r.cost or 0.0 for r in calls),
        all(r.cache_used for r in calls),
        None,
        max(r.latency for r in calls),
        None,
    )
