"""The turn-kind handlers: one per ``TurnKind``, in a registry the engine dispatches on (claim,
resume, commit), and a new kind registered in one place."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest
from edsl import Agent, AgentList

from conversation.models import OfflineModel
from conversation.planning.coordinator import CoordinatorPolicy
from conversation.rooms.engine import HANDLERS, Engine, HeldRoom, TurnHandler, handler_of
from conversation.rooms.engine import kinds as kinds_module
from conversation.rooms.engine.kinds import ClaimContext
from conversation.rooms.engine.records import Plan
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from conversation.vocabulary import TurnKind
from storage import Database
from tests.support.room_common import FixedModels


def test_every_turn_kind_has_one_handler_in_claim_order() -> None:
    assert list(HANDLERS) == [
        TurnKind.SUMMARY,
        TurnKind.CANDIDATES,
        TurnKind.PICK,
        TurnKind.HAND,
        TurnKind.SPEAK,
    ]
    assert set(HANDLERS) == set(TurnKind)
    assert all(h.kind == k for k, h in HANDLERS.items())


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (None, TurnKind.SPEAK),
        ({"chosen_because": "round robin"}, TurnKind.SPEAK),
        ({"event": "summary"}, TurnKind.SUMMARY),
        ({"event": "candidates"}, TurnKind.CANDIDATES),
        ({"event": "pick"}, TurnKind.PICK),
        ({"event": "hand"}, TurnKind.HAND),
    ],
)
def test_a_stored_turn_is_handled_by_its_kind(data: Any, kind: TurnKind) -> None:
    assert handler_of(data) is HANDLERS[kind]


def _room(db: Database, **kwargs: Any) -> Room:
    room = Room.create(
        db,
        name="kinds",
        agents=AgentList([Agent(name=n) for n in ("Ana", "Ben")]),
        termination=MaxTurns(2),
        model=OfflineModel(seed=1, mention_probability=0),
        **kwargs,
    )
    room.post("hello")
    return room


def test_a_coordinator_pick_is_claimed_and_committed_by_its_handler(db: Database) -> None:
    room = Room.create(
        db,
        name="pick",
        agents=AgentList([Agent(name=n) for n in ("Boss", "Ana", "Ben")]),
        planner=CoordinatorPolicy("Boss"),
        termination=MaxTurns(2),
        model=OfflineModel(replies=["Ana", "hi from Ana"]),
        in_process_only=True,
    )
    room.post("hello")
    room.run(max_turns=2)
    pick, spoken = [e for e in room.events() if e.kind == "agent"][:2]
    assert handler_of(pick) is HANDLERS[TurnKind.PICK]
    assert pick.speaker == "Boss" and pick.data["pick"] == "Ana" and pick.content == "picked Ana"
    assert handler_of(spoken) is HANDLERS[TurnKind.SPEAK] and spoken.speaker == "Ana"


class _Aside(TurnHandler):
    """A stand-in for a new kind: claims every turn as a fixed speaker and commits a pass."""

    kind: ClassVar[TurnKind] = TurnKind.SPEAK
    claimed: ClassVar[list[str]] = []

    def claim(self, ctx: ClaimContext) -> Plan | None:
        plan = HANDLERS_BEFORE[TurnKind.SPEAK].claim(ctx)
        self.claimed.append(ctx.planned.speaker)
        return plan

    def resume(self, config: Any, before: Any, turn: Any, planner: Any) -> Plan:
        return HANDLERS_BEFORE[TurnKind.SPEAK].resume(config, before, turn, planner)

    def commit(self, call: Any, outcome: Any, base: dict[str, Any]) -> Any:
        return HANDLERS_BEFORE[TurnKind.SPEAK].commit(call, outcome, {**base, "cost": 0.5})


HANDLERS_BEFORE = dict(HANDLERS)


def test_a_kind_registered_in_the_registry_is_what_the_engine_dispatches_to(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    room = _room(db)
    monkeypatch.setitem(kinds_module.HANDLERS, TurnKind.SPEAK, _Aside())
    engine = Engine(db, "kinds", models=FixedModels(OfflineModel(replies=["one"])))
    import storage

    token = storage.acquire_lease(db, room.id, "kinds", 60)
    assert token is not None
    step = asyncio.run(engine.step(HeldRoom(room.id, token)))
    assert _Aside.claimed[0] == "Ana"  # (the follow-up plan after the commit asks again)
    assert step.turn is not None and step.turn.content == "one" and step.turn.cost == 0.5
