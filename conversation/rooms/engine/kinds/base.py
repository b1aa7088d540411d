"""What a turn kind's handler does, and what it is given.

A handler is one kind's whole story (``vocabulary.TurnKind``): when a turn of its kind is
due and how it is claimed (``claim``), how its prompt is rebuilt when an open turn is resumed
(``resume``), how its model is asked (``ask``) and how the reply becomes the turn's fenced commit
(``commit``). ``claim``, ``resume`` and ``commit`` are pure; ``ask`` is the only call out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import storage
from conversation import models
from conversation.models.bindings import ModelCache
from conversation.planning.planner import PlannedTurn
from conversation.rooms.config import RoomConfig
from conversation.rooms.engine.kinds.showing import Shown, notice_shown, speaking_shown
from conversation.rooms.engine.records import Call, Plan, Reply, RoomRules, StepKind
from conversation.rooms.prompt import TurnPrompt
from conversation.termination.state import RoomState
from conversation.vocabulary import Notice, TurnEntry, TurnKind


@dataclass(frozen=True, slots=True)
class ClaimContext:
    """What a handler reads to claim a new turn: the room's rules (its config, planner and what
    each speaker's turns share), the log's view, the planner's next turn (and why), the claim
    fields every kind shares, and the label of the model answering for a speaker (``None``: the
    room's own model)."""

    rules: RoomRules
    view: RoomState
    planned: PlannedTurn
    because: str
    round: int  # the round of the log's last row (0 when empty)
    common: Mapping[str, Any]
    label: Callable[[str | None], str]

    @property
    def config(self) -> RoomConfig:
        return self.rules.config

    @property
    def planner(self) -> Any:
        return self.rules.planner

    def claim(
        self,
        speaker: str,
        round_: int,
        prompt: TurnPrompt,
        data: dict[str, Any],
        *,
        model: str,
        saw: list[int] | None = None,
        drafting: Any = None,
        settings: Any = None,
    ) -> Plan:
        """The ``claim`` plan of a turn of ``speaker`` with ``prompt`` (``settings``: the call
        settings it was fitted to, when the handler read them)."""
        claim = storage.TurnClaim(
            **self.common,
            speaker=speaker,
            round=round_,
            saw=list(prompt.saw) if saw is None else saw,
            model=model,
            data=data,
        )
        return Plan(
            StepKind.CLAIM,
            config=self.config,
            claim=claim,
            prompt=prompt,
            drafting=drafting,
            settings=settings,
        )


class TurnHandler:
    """One turn kind (see the module docstring); subclasses set ``kind`` and override what
    differs. The default ``ask`` is one call of the turn's model with its prompt."""

    kind: ClassVar[TurnKind]
    may_stream: ClassVar[bool] = False
    """Its reply may reach the page as it is written (a partial draft, docs/streaming.md)."""

    def show(self, turn: TurnEntry) -> Shown:
        """How a turn of this kind is shown to people (``showing``): a speaking turn's bubble,
        pass or skipped turn unless the kind says otherwise."""
        return speaking_shown(turn)

    def show_notice(self, notice: Notice) -> Shown:
        """How a notice recording this kind (``data["event"]``) is shown: a plain notice unless
        the kind says otherwise."""
        return notice_shown(notice)

    def claim(self, ctx: ClaimContext) -> Plan | None:
        """The claim of a new turn of this kind when one is due now, else None (the registry
        asks each handler in order; the first due wins)."""
        return None

    def prompt(self, config: RoomConfig, before: RoomState, turn: Any) -> TurnPrompt:
        """The prompt ``turn`` (a stored row, or its entry) is asked with, rebuilt from the
        events ``before`` it, and only those: what a resumed turn is asked again, and what a
        page shows as the prompt a turn was asked."""
        raise NotImplementedError

    def resume(
        self, config: RoomConfig, before: RoomState, turn: storage.Event, planner: Any
    ) -> Plan:
        """The ``resume`` plan of the open ``turn``: its :meth:`prompt`."""
        return resumed(config, turn, self.prompt(config, before, turn))

    async def ask(self, call: Call, cache: ModelCache) -> Reply:
        """The reply to ``call`` (attempts are counted by the caller). ``cache``: the engine's
        model objects, for a kind that asks other models than the turn's own."""
        reply = await models.ask(
            call.model,
            user_prompt=call.prompt.user_prompt,
            system_prompt=call.prompt.system_prompt,
            cache=call.cache,
            iteration=call.iteration,
            settings=call.settings,
        )
        return Reply(reply, 0)

    def commit(self, call: Call, outcome: Reply, base: dict[str, Any]) -> storage.TurnCommit:
        """The fenced commit of ``outcome`` (``base``: the usage and fence fields of every
        commit)."""
        raise NotImplementedError


def resumed(config: RoomConfig, turn: storage.Event, prompt: TurnPrompt, **extra: Any) -> Plan:
    """A ``resume`` plan of ``turn`` with ``prompt``."""
    return Plan(StepKind.RESUME, config=config, turn=turn, prompt=prompt, **extra)
