"""Asking a turn's model, with the retry rules: a transient failure is recorded on the turn (tries,
next attempt time: a restart keeps the budget) and retried after a growing backoff; a model server
that refuses or resets the connection is waited for (no try counted) up to ``outage_seconds()``,
checking every second whether it is back (``server_window.wait_until_up``);
a turn that cannot succeed is failed with its room in one write. Both waits are the one backoff
formula (``models.retries.Backoff``); this loop is not tenacity's because its tries are stored
on the turn, not kept in this process."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import storage
from conversation.models.bindings import ModelCache
from conversation.models.chat_shape import EchoOnlyReply
from conversation.models.retries import (
    OUTAGE_ENV,
    OUTAGE_WAIT,
    SERVER_UNAVAILABLE,
    TRANSIENT_HTTP_STATUSES,
    Backoff,
    Outage,
    is_server_unavailable,
    is_transient,
    outage_seconds,
    unavailable_cause,
)
from conversation.models.server_window import wait_until_up
from conversation.rooms.engine.kinds.speak import pass_after_echoes
from conversation.rooms.engine.rate import ask_within_rate
from conversation.rooms.engine.records import (
    Call,
    HeldRoom,
    Reply,
    Step,
    StepKind,
    error_record,
    failure_reason,
    fault,
)
from conversation.vocabulary import RoomStatus, TurnKind, TurnState

log = logging.getLogger(__name__)


async def ask_with_retries(
    db: storage.Database, cached_models: ModelCache, call: Call, now: Callable[[], datetime]
) -> Reply | Step:
    """The handler's answer, each transient failure recorded and retried after a backoff."""
    held, turn, retry = call.held, call.turn, call.config.retry
    handler = call.handler
    attempts = turn.attempts
    outage = Outage()
    while True:
        try:
            fault("during_call")
            outcome = await ask_within_rate(db, call, lambda: handler.ask(call, cached_models))
            return dataclasses.replace(outcome, attempts=attempts + 1)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_server_unavailable(exc):
                waited = await _wait_for_server(db, call, exc, outage, attempts, now)
                if isinstance(waited, Step):
                    return waited
                continue
            attempts += 1
            echo = isinstance(exc, EchoOnlyReply)  # retried, then (a speak turn) a pass
            speaks = handler.kind is TurnKind.SPEAK
            if isinstance(exc, EchoOnlyReply) and attempts >= retry.max_attempts and speaks:
                return pass_after_echoes(call, exc, attempts)
            transient = echo or is_transient(exc, TRANSIENT_HTTP_STATUSES)
            if not transient or attempts >= retry.max_attempts:
                return fail_turn(db, held, turn, exc, attempts, transient)
            delay = Backoff(first=retry.base_delay).delay(attempts, exc)
            recorded = storage.record_attempt(
                db,
                turn.id,  # type: ignore[arg-type]
                held.token,
                error=error_record(exc),
                next_attempt_at=now() + timedelta(seconds=delay),
            )
            if recorded is None:  # stopped by a person, or the lease is gone
                held.forget_log()
                return Step(StepKind.WAIT, RoomStatus.RUNNING, "turn no longer ours")
            await asyncio.sleep(delay)


async def _wait_for_server(
    db: storage.Database,
    call: Call,
    exc: BaseException,
    outage: Outage,
    attempts: int,
    now: Callable[[], datetime],
) -> Step | None:
    """The model server refused or reset the connection: record "waiting for the model
    server" on the turn (no try counted) and wait a growing delay; a ``Step`` when the turn
    ends instead (the outage outlasted ``outage_seconds()``, or the turn is no longer ours)."""
    held, turn = call.held, call.turn
    bound = outage_seconds()
    waited = outage.waited()
    cause = unavailable_cause(exc) or exc
    if waited >= bound:
        record = {
            "type": type(cause).__name__,
            "code": SERVER_UNAVAILABLE,
            "message": f"model server unavailable for {waited:.0f} s (connection refused or "
            f"reset), longer than {OUTAGE_ENV}={bound:g}: {cause}"[:2000],
        }
        return fail_turn(db, held, turn, exc, attempts + 1, True, record=record)
    outage.tries += 1
    delay = min(OUTAGE_WAIT.delay(outage.tries), max(bound - waited, 0.0))
    recorded = storage.record_attempt(
        db,
        turn.id,  # type: ignore[arg-type]
        held.token,
        error={
            "type": type(cause).__name__,
            "code": SERVER_UNAVAILABLE,
            "message": f"model server unavailable (connection refused or reset); waiting "
            f"{waited:.0f} s so far, up to {bound:g} s",
        },
        next_attempt_at=now() + timedelta(seconds=delay),
        counted=False,
    )
    if recorded is None:  # stopped by a person, or the lease is gone
        held.forget_log()
        return Step(StepKind.WAIT, RoomStatus.RUNNING, "turn no longer ours")
    log.info("room %s: model server unavailable; retry in %.0f s", held.room_id, delay)
    # the step may be 30 s: a server back sooner is noticed within a second (a TCP connect)
    await wait_until_up(getattr(call.model, "base_url", None), delay)
    return None


def fail_turn(
    db: storage.Database,
    held: HeldRoom,
    turn: storage.Event,
    exc: BaseException,
    attempts: int,
    transient: bool,
    *,
    record: dict[str, Any] | None = None,
) -> Step:
    """A turn that cannot succeed now: ``interrupted`` (transient, retry budget spent: a person
    may resume it) or ``failed`` (the same call would fail again). The room fails with it, in
    the same write. ``record``: the error to store (default ``error_record(exc)``)."""
    record = record or error_record(exc)
    reason = failure_reason(turn, record)
    commit = storage.TurnCommit(
        event_id=turn.id,  # type: ignore[arg-type]
        token=held.token,
        state=TurnState.INTERRUPTED if transient else TurnState.FAILED,
        error=record,
        attempts=attempts,
        next_attempt_at=None,
        room_status=RoomStatus.FAILED,
        stop_reason=reason,
    )
    applied = storage.commit_turns(db, [commit])[0]
    held.forget_log()
    if not applied:
        return Step(StepKind.WAIT, RoomStatus.RUNNING, "commit refused by the fence")
    log.warning("room %s: %s", held.room_id, reason)
    return Step(StepKind.FAIL, RoomStatus.FAILED, reason)


__all__ = ["ask_with_retries", "fail_turn"]
