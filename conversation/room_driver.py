"""Driving one room's turns under a lease: claim, call the model outside any transaction, commit
with a fence (DESIGN decision 2).

One ``take_turn`` call, for a worker holding the room's lease ``token``:

1. read the committed log; if a turn is open and ``running`` (a crash, or a person denied the
   draft), resume it with a prompt rebuilt from the events *before* it; if it waits for a person or
   was interrupted, do nothing;
2. otherwise check termination, then plan the next speaker from the log and claim the turn
   (``storage.claim_turn``: one transaction; refused if the log moved or the lease is gone);
3. call the model with no transaction open, retrying transient failures (typed, with backoff);
   every failed try is persisted (``attempts``, ``next_attempt_at``), so a restart does not reset
   the retry budget;
4. commit the reply fenced by the lease token (a paused zombie's late commit is refused), as
   ``done``, or ``waiting`` in a moderated room; then settle the room's status from the log.

Exactly-once holds for the transcript, not for the model call: a turn resumed after a crash asks
the model again, with the same prompt.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import storage

from . import models
from .retries import ROOM_STATUSES, backoff_delay, http_status, is_transient
from .room_config import RoomConfig
from .room_log import OPEN_STATES, LogView, log_view, turn_request_id
from .room_planner import plan_turn
from .room_prompt import TurnPrompt, build_turn_prompt, denial_feedback, is_pass, room_template

log = logging.getLogger(__name__)

#: Environment variable naming a point of a turn at which the process kills itself (crash tests).
FAULT_ENV = "CONVERSATION_FAULT_POINT"
FAULT_POINTS = ("after_claim", "during_call", "after_answer", "before_commit")


def _fault(point: str) -> None:
    if os.environ.get(FAULT_ENV) == point:  # a test hook: never set outside the crash tests
        os.kill(os.getpid(), signal.SIGKILL)


def error_record(exc: BaseException) -> dict[str, Any]:
    """The ``{type, code, message}`` stored on a failed turn (never a secret: messages only)."""
    status = http_status(exc)
    code = getattr(exc, "code", None)
    if not isinstance(code, str):
        code = str(status) if status is not None else None
    return {"type": type(exc).__name__, "code": code, "message": str(exc)[:2000]}


@dataclass(frozen=True, slots=True)
class Settled:
    """What the room is after a step that took no turn: its status and why."""

    status: str
    reason: str | None = None
    again: bool = False  # nothing was done, but planning again may take a turn


class ModelCache:
    """Models resolved from specs, shared by the turns of a process (building one is not free)."""

    def __init__(self) -> None:
        self._models: dict[str, Any] = {}

    def get(self, spec: Mapping[str, Any]) -> Any:
        import json

        key = json.dumps(spec, sort_keys=True)
        model = self._models.get(key)
        if model is None:
            model = models.resolve_model(dict(spec))
            self._models[key] = model
        return model


class TurnDriver:
    """Takes turns of rooms for one owner (a worker or a ``Room`` object)."""

    def __init__(
        self,
        db: storage.Database,
        owner: str,
        *,
        lease_ttl: float = 60.0,
        cache: Any = None,
        model_cache: ModelCache | None = None,
        clock: Callable[[], datetime] | None = None,
        settle_after_commit: bool = True,
    ) -> None:
        self.db = db
        # A worker steps the room again at once (which settles it); a lone ``room.step()`` settles
        # right after its commit so the status is current for the UI.
        self.settle_after_commit = settle_after_commit
        self.owner = owner
        self.lease_ttl = lease_ttl
        self.cache = cache
        self.models = model_cache or ModelCache()
        self._now = clock or (lambda: datetime.now(UTC))

    # -- the step -----------------------------------------------------------------------------

    async def take_turn(self, room_id: int, token: int) -> storage.Event | Settled:
        """One turn of the room (see the module docstring); a committed event, or ``Settled``."""
        room = storage.get_room(self.db, room_id)
        if room.status != "running":
            return Settled(room.status, room.stop_reason)
        config = RoomConfig.from_dict(room.config)
        rows = storage.events(self.db, room_id)
        open_row = next((r for r in reversed(rows) if r.state in OPEN_STATES), None)
        if open_row is not None:
            if open_row.state == "waiting":
                return self._set_status(room_id, token, "waiting", None)
            if open_row.state == "interrupted":
                return self._set_status(room_id, token, "failed", room.stop_reason)
            return await self._run(room_id, token, config, rows, open_row)
        view = log_view(config.names, rows)
        settled = self._settle(config, view)
        if settled is not None:
            return self._finish(room_id, token, settled)
        planned = plan_turn(config.planner_object(), config.names, view.events)
        assert planned is not None  # _settle returned None, so there is a next speaker
        template = room_template(config)
        prompt = build_turn_prompt(config, view, planned.speaker, template=template)
        spec = config.spec(planned.speaker)
        claimed = storage.claim_turn(
            self.db,
            room_id,
            token=token,
            expected_last_seq=view.last_seq,
            speaker=planned.speaker,
            request_id=turn_request_id(view.last_seq + 1),
            activity=rows[-1].activity if rows else 0,
            round=planned.round,
            saw=list(prompt.saw),
            model=models.model_label(self.models.get(spec.model or config.model)),
            parent_event_id=rows[-1].id if rows else None,
        )
        if claimed is None:
            # The log moved (a human message landed) or the lease is gone: nothing was written.
            return Settled("running", "claim refused", again=True)
        _fault("after_claim")
        return await self._run(room_id, token, config, rows, claimed, prompt=prompt)

    def _settle(self, config: RoomConfig, view: LogView) -> Settled | None:
        """``terminated`` or ``settled`` when no turn should be taken now, else None."""
        condition = config.termination_object()
        if condition is not None:
            decision = condition.evaluate(view.state())
            if decision is not None:
                return Settled("terminated", decision.reason)
        if plan_turn(config.planner_object(), config.names, view.events) is None:
            return Settled("settled", None)
        return None

    def _finish(self, room_id: int, token: int, settled: Settled) -> Settled:
        if settled.status == "terminated":
            # The reason is data, kept with the event that ended the room.
            storage.append_message(
                self.db,
                room_id,
                "system",
                "room",
                f"Stopped: {settled.reason}",
                data={"event": "terminated", "reason": settled.reason},
            )
        return self._set_status(room_id, token, settled.status, settled.reason)

    def _set_status(self, room_id: int, token: int, status: str, reason: str | None) -> Settled:
        storage.update_room(
            self.db,
            room_id,
            status=status,
            stop_reason=reason,
            expected_status="running",
            token=token,
        )
        return Settled(status, reason)

    # -- one model call, retried, then the fenced commit ----------------------------------------

    async def _run(
        self,
        room_id: int,
        token: int,
        config: RoomConfig,
        rows: list[storage.Event],
        turn: storage.Event,
        prompt: TurnPrompt | None = None,
    ) -> storage.Event | Settled:
        if prompt is None:  # a resumed turn: rebuilt from the events before it, and only those
            before = log_view(config.names, rows, before_seq=turn.seq)
            denials = list((turn.data or {}).get("denials") or [])
            prompt = build_turn_prompt(
                config, before, turn.speaker, feedback=denial_feedback(denials)
            )
        spec = config.spec(turn.speaker)
        model = self.models.get(spec.model or config.model)
        attempts = turn.attempts
        if turn.next_attempt_at is not None:
            wait = (turn.next_attempt_at - self._now()).total_seconds()
            if wait > 0:
                await asyncio.sleep(min(wait, 60.0))
        renewer = asyncio.ensure_future(self._keep_lease(room_id, token))
        try:
            while True:
                try:
                    _fault("during_call")
                    reply = await models.ask(
                        model,
                        user_prompt=prompt.user_prompt,
                        system_prompt=prompt.system_prompt,
                        cache=self.cache,
                    )
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    attempts += 1
                    transient = is_transient(exc, ROOM_STATUSES)
                    if transient and attempts < config.retry.max_attempts:
                        delay = backoff_delay(config.retry.base_delay, attempts, exc)
                        recorded = storage.record_attempt(
                            self.db,
                            turn.id,
                            token,
                            error=error_record(exc),
                            next_attempt_at=self._now() + timedelta(seconds=delay),
                        )
                        if recorded is None:  # stopped by a person, or the lease is gone
                            return Settled("running", "turn no longer ours")
                        await asyncio.sleep(delay)
                        continue
                    return self._fail(room_id, token, turn, exc, attempts, transient)
        finally:
            renewer.cancel()
        _fault("after_answer")
        passed = is_pass(reply.text)
        state = "waiting" if config.moderated and not passed else "done"
        _fault("before_commit")
        committed = storage.commit_turn(
            self.db,
            turn.id,
            token,
            state=state,
            kind="pass" if passed else "agent",
            content="" if passed else reply.text,
            model=reply.model_name,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cost=reply.cost,
            latency=reply.latency,
            attempts=attempts + 1,
            error=None,
            next_attempt_at=None,
        )
        if not committed:
            return Settled("running", "commit refused by the fence")
        event = turn.model_copy(
            update={
                "state": state,
                "kind": "pass" if passed else "agent",
                "content": "" if passed else reply.text,
                "model": reply.model_name,
                "input_tokens": reply.input_tokens,
                "output_tokens": reply.output_tokens,
                "cost": reply.cost,
                "latency": reply.latency,
                "attempts": attempts + 1,
                "error": None,
                "next_attempt_at": None,
            }
        )
        if state == "waiting":
            self._set_status(room_id, token, "waiting", None)
        elif self.settle_after_commit:
            self._after_commit(room_id, token, config)
        return event

    def _fail(
        self,
        room_id: int,
        token: int,
        turn: storage.Event,
        exc: BaseException,
        attempts: int,
        transient: bool,
    ) -> Settled:
        """A turn that cannot succeed now: ``interrupted`` (transient, retry budget spent: a person
        may resume it) or ``failed`` (the same call would fail again). The room stops as failed."""
        record = error_record(exc)
        storage.commit_turn(
            self.db,
            turn.id,
            token,
            state="interrupted" if transient else "failed",
            error=record,
            attempts=attempts,
            next_attempt_at=None,
        )
        reason = (
            f"{turn.speaker}'s turn (seq {turn.seq}) failed: {record['type']}: {record['message']}"
        )
        log.warning("room %s: %s", room_id, reason)
        return self._set_status(room_id, token, "failed", reason)

    def _after_commit(self, room_id: int, token: int, config: RoomConfig) -> None:
        """Settle the room's status right away, so the UI shows 'settled' without another step."""
        rows = storage.events(self.db, room_id)
        if any(r.state in OPEN_STATES for r in rows):
            return
        settled = self._settle(config, log_view(config.names, rows))
        if settled is not None:
            self._finish(room_id, token, settled)

    async def _keep_lease(self, room_id: int, token: int) -> None:
        """Renew the lease while a model call runs (a slow call must not lose the room)."""
        while True:
            await asyncio.sleep(self.lease_ttl / 3)
            if not storage.renew_lease(self.db, room_id, self.owner, token, self.lease_ttl):
                return


def owner_id(role: str = "room") -> str:
    """A lease owner name unique to this process and object."""
    import socket
    import uuid

    return f"{role}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


__all__ = [
    "FAULT_ENV",
    "FAULT_POINTS",
    "ModelCache",
    "Settled",
    "TurnDriver",
    "error_record",
    "owner_id",
]
