"""Driving a room from this process: turns taken one engine step at a time under one lease.

``Room.step()`` / ``Room.run()`` use it; a worker drives every runnable room the same way with
the engine's batch. The room's log is kept between steps, so a step costs the same at turn 800
as at turn 50.
"""

from __future__ import annotations

import asyncio

import storage
from conversation.rooms.engine import Engine, HeldRoom, StepKind
from conversation.vocabulary import TurnState


async def drive(
    db: storage.Database, room_id: int, owner: str, engine: Engine, max_turns: int
) -> list[storage.Event]:
    """Take up to ``max_turns`` turns of room ``room_id`` under one lease held by ``owner``
    (released at the end); the events of the turns taken, none when another worker drives the
    room right now. It stops at a turn that did not finish (a draft waits, a turn failed) and
    at a step that was not a turn of the room's own."""
    token = storage.acquire_lease(db, room_id, owner, engine.lease_ttl)
    if token is None:
        return []  # another worker drives this room right now
    loop = asyncio.get_running_loop()
    renewed = loop.time()
    held = HeldRoom(room_id, token)
    taken: list[storage.Event] = []
    try:
        while len(taken) < max_turns:
            if loop.time() - renewed > engine.lease_ttl / 3:
                if not storage.renew_lease(db, room_id, owner, token, engine.lease_ttl):
                    break
                renewed = loop.time()
            step = await engine.step(held, claim_next=len(taken) + 1 < max_turns)
            if step.turn is None:
                if step.again:
                    continue  # bounded: the engine's refusal and failure counters
                break
            taken.append(step.turn)
            if step.kind != StepKind.CLAIM and step.kind != StepKind.RESUME:
                break
            if step.turn.state != TurnState.DONE:
                break
        else:
            if taken and held.pending is None:
                # Stopped by the count, not by the room: settle its status now (the UI shows
                # "settled" at once), as the next step would.
                engine.begin([held], claim=False)
    finally:
        storage.release_lease(db, room_id, owner, token)
    return taken


__all__ = ["drive"]
