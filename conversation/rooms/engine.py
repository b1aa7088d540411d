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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import storage
from conversation import models
from conversation.context.window import SUMMARY_SPEAKER, summary_request
from conversation.models.bindings import ModelCache
from conversation.models.retries import ROOM_STATUSES, backoff_delay, http_status, is_transient
from conversation.planning.coordinator import CoordinatorPolicy, InvalidPickError, parse_pick
from conversation.planning.planner import plan_turn
from conversation.rooms.config import RoomConfig
from conversation.rooms.log import OPEN_STATES, LogView, covers_seqs, log_view, turn_request_id
from conversation.rooms.prompt import (
    TurnPrompt,
    build_pick_prompt,
    build_summary_prompt,
    build_turn_prompt,
    denial_feedback,
    is_pass,
    room_template,
)

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


@dataclass(frozen=True, slots=True)
class Decision:
    """What a room needs now: to be ``settled`` (its status written, unless ``write`` is False
    because it is already so), a ``claim`` of a new turn (with its ``prompt``), or the ``resume``
    of its open running turn."""

    settled: Settled | None = None
    write: bool = True
    config: RoomConfig | None = None
    rows: Sequence[storage.Event] = ()
    claim: storage.TurnClaim | None = None
    prompt: TurnPrompt | None = None
    resume: storage.Event | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A model reply for a turn, and the attempts it took."""

    reply: models.ModelReply
    attempts: int


def committed_event(turn: storage.Event, commit: storage.TurnCommit) -> storage.Event:
    """The turn as ``commit`` left it (no read back from the database)."""
    return turn.model_copy(
        update={
            "state": commit.state,
            "kind": commit.kind,
            "content": commit.content,
            "model": commit.model,
            "input_tokens": commit.input_tokens,
            "output_tokens": commit.output_tokens,
            "cost": commit.cost,
            "latency": commit.latency,
            "attempts": commit.attempts,
            "error": commit.error,
            "next_attempt_at": None,
            "data": {**(turn.data or {}), **(commit.data or {})},
        }
    )


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
    ) -> None:
        # After a commit the caller settles the room's status: a worker steps the room again at
        # once, ``Room.run()`` calls ``settle_now`` when it stops by count.
        self.db = db
        self.owner = owner
        self.lease_ttl = lease_ttl
        self.cache = cache
        self.models = model_cache or ModelCache()
        self._now = clock or (lambda: datetime.now(UTC))

    # -- deciding what a room needs ------------------------------------------------------------

    def decide(self, room: storage.Room, rows: list[storage.Event], token: int) -> Decision:
        """What the room needs now, from its row and its log (no writes; see ``Decision``)."""
        if room.status != "running":
            return Decision(settled=Settled(room.status, room.stop_reason), write=False)
        config = RoomConfig.from_dict(room.config)
        open_row = next((r for r in reversed(rows) if r.state in OPEN_STATES), None)
        if open_row is not None:
            if open_row.state == "waiting":
                return Decision(settled=Settled("waiting", None))
            if open_row.state == "interrupted":
                return Decision(settled=Settled("failed", room.stop_reason))
            return Decision(config=config, rows=rows, resume=open_row)
        view = log_view(config.names, rows)
        condition = config.termination_object()
        if condition is not None:
            decision = condition.evaluate(view.state())
            if decision is not None:
                return Decision(settled=Settled("terminated", decision.reason))
        planner = config.planner_object()
        planned = plan_turn(planner, config.names, view.events)
        if planned is None:
            return Decision(settled=Settled("settled", None))
        summary = self._summary_claim(room, rows, config, view, token)
        if summary is not None:
            return summary
        data = None
        eligible = (
            planner.pick_needed(config.names, view.events)
            if isinstance(planner, CoordinatorPolicy)
            else None
        )
        if eligible is not None:
            # The coordinator's turn is to pick, not to speak; the pick is stored with the turn,
            # so a replay reads it and never asks again.
            prompt = build_pick_prompt(config, view, planned.speaker, eligible)
            data = {"event": "pick", "eligible": list(eligible)}
        else:
            prompt = build_turn_prompt(
                config, view, planned.speaker, template=room_template(config)
            )
        spec = config.spec(planned.speaker)
        claim = storage.TurnClaim(
            room_id=room.id,  # type: ignore[arg-type]
            token=token,
            expected_last_seq=view.last_seq,
            speaker=planned.speaker,
            request_id=turn_request_id(view.last_seq + 1),
            activity=rows[-1].activity if rows else 0,
            round=planned.round,
            saw=list(prompt.saw),
            model=models.model_label(self.models.get(spec.model or config.model)),
            parent_event_id=rows[-1].id if rows else None,
            data=data,
        )
        return Decision(config=config, rows=rows, claim=claim, prompt=prompt)

    def _summary_claim(
        self,
        room: storage.Room,
        rows: Sequence[storage.Event],
        config: RoomConfig,
        view: LogView,
        token: int,
    ) -> Decision | None:
        """With a summarising context policy, the turn that summarises what fell out of the
        window (asked of the room's model once, stored as a summary event, replayed after)."""
        policy = config.context_policy()
        if not policy.summarize:
            return None
        prompt = build_summary_prompt(config, view)
        if prompt is None:
            return None
        request = summary_request(config.names, view.events, policy)
        assert request is not None
        claim = storage.TurnClaim(
            room_id=room.id,  # type: ignore[arg-type]
            token=token,
            expected_last_seq=view.last_seq,
            speaker=SUMMARY_SPEAKER,
            request_id=turn_request_id(view.last_seq + 1),
            activity=rows[-1].activity if rows else 0,
            round=rows[-1].round if rows else 0,
            saw=list(prompt.saw),
            model=models.model_label(self.models.get(config.model)),
            parent_event_id=rows[-1].id if rows else None,
            data={"event": "summary", "covers_seqs": covers_seqs(view, request.covers)},
        )
        return Decision(config=config, rows=rows, claim=claim, prompt=prompt)

    def apply(self, room_id: int, token: int, decision: Decision) -> Settled:
        """Write a settled decision: the room's status (and, when terminated, the system event
        that carries the reason)."""
        settled = decision.settled
        assert settled is not None
        if decision.write:
            # One fenced transaction: the status and, when terminated, the system event that
            # carries the reason (a worker whose lease expired writes neither).
            storage.settle_rooms(self.db, [settlement(room_id, token, settled)])
        return settled

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

    # -- the single-room step ---------------------------------------------------------------------

    async def take_turn(self, room_id: int, token: int) -> storage.Event | Settled:
        """One turn of the room (see the module docstring); a committed event, or ``Settled``."""
        room, rows = self._read(room_id)
        decision = self.decide(room, rows, token)
        if decision.settled is not None:
            return self.apply(room_id, token, decision)
        assert decision.config is not None
        turn = decision.resume
        if turn is not None and not storage.lease_is_current(self.db, room_id, token):
            # Only a current lease holder may spend money on an open turn (it may be another
            # worker's, claimed after this one's lease ran out).
            return Settled("running", "lease lost")
        if decision.claim is not None:
            turn = storage.claim_turns(self.db, [decision.claim])[0]
            if turn is None:
                # The log moved (a human message landed) or the lease is gone: nothing written.
                return Settled("running", "claim refused", again=True)
            _fault("after_claim")
        assert turn is not None
        outcome = await self.call(
            room_id, token, decision.config, decision.rows, turn, decision.prompt
        )
        if isinstance(outcome, Settled):
            return outcome
        _fault("before_commit")
        commit = self.commit_for(turn, token, decision.config, outcome)
        if not storage.commit_turns(self.db, [commit])[0]:
            return Settled("running", "commit refused by the fence")
        event = committed_event(turn, commit)
        if event.state == "failed":
            return self._set_status(room_id, token, "failed", failure_reason(event))
        if event.state == "waiting":
            self._set_status(room_id, token, "waiting", None)
        return event

    def settle_now(self, room_id: int, token: int) -> None:
        """Write the room's status if it has nothing more to do (settled, terminated), so the UI
        shows it at once instead of after another step."""
        decision = self.decide(
            storage.get_room(self.db, room_id), storage.events(self.db, room_id), token
        )
        if decision.settled is not None:
            self.apply(room_id, token, decision)

    def _read(self, room_id: int) -> tuple[storage.Room, list[storage.Event]]:
        """The room and its log in one read (Core rows, no ORM overhead)."""
        logs = storage.room_logs(self.db, [room_id])
        if room_id not in logs:
            raise storage.RoomNotFound(f"room {room_id} does not exist")
        return logs[room_id]

    # -- one model call, retried ------------------------------------------------------------------

    async def call(
        self,
        room_id: int,
        token: int,
        config: RoomConfig,
        rows: Sequence[storage.Event],
        turn: storage.Event,
        prompt: TurnPrompt | None = None,
        *,
        renew: bool = True,
    ) -> Reply | Settled:
        """Ask the model for ``turn`` (claimed, or found running), retrying transient failures.

        Every failed try is persisted first (attempts, next attempt time). A turn that cannot
        succeed is written as interrupted/failed here and the room as failed (``Settled``)."""
        if prompt is None:  # a resumed turn: rebuilt from the events before it, and only those
            before = log_view(config.names, rows, before_seq=turn.seq)
            data = turn.data or {}
            if data.get("event") == "summary":
                prompt = build_summary_prompt(config, before)
                if prompt is None:  # nothing to summarise any more: finish it as an empty pass
                    prompt = TurnPrompt("", "Reply with the single word PASS.", ())
            elif data.get("event") == "pick":
                prompt = build_pick_prompt(config, before, turn.speaker, data.get("eligible", []))
            else:
                prompt = build_turn_prompt(
                    config, before, turn.speaker, feedback=denial_feedback(data.get("denials", []))
                )
        own = config.spec(turn.speaker).model if turn.speaker in config.names else None
        model = self.models.get(own or config.model)
        attempts = turn.attempts
        if turn.next_attempt_at is not None:
            wait = (turn.next_attempt_at - self._now()).total_seconds()
            if wait > 0:
                await asyncio.sleep(min(wait, 60.0))
        renewer = asyncio.ensure_future(self._keep_lease(room_id, token)) if renew else None
        try:
            while True:
                try:
                    _fault("during_call")
                    reply = await models.ask(
                        model,
                        user_prompt=prompt.user_prompt,
                        system_prompt=prompt.system_prompt,
                        cache=self.cache,
                        settings=config.call_settings(turn.speaker),
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
                            turn.id,  # type: ignore[arg-type]
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
            if renewer is not None:
                renewer.cancel()
        _fault("after_answer")
        return Reply(reply, attempts + 1)

    def commit_for(
        self, turn: storage.Event, token: int, config: RoomConfig, outcome: Reply
    ) -> storage.TurnCommit:
        """The fenced commit of a reply: ``done`` (``waiting`` in a moderated room), or a pass."""
        reply = outcome.reply
        usage: dict[str, Any] = {
            "model": reply.model_name,
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cost": reply.cost,
            "latency": reply.latency,
            "attempts": outcome.attempts,
            "next_attempt_at": None,
        }
        data = turn.data or {}
        if data.get("event") == "summary":
            return storage.TurnCommit(
                event_id=turn.id,  # type: ignore[arg-type]
                token=token,
                state="done",
                kind="agent",
                content=reply.text,
                error=None,
                **usage,
            )
        if data.get("event") == "pick":
            try:
                pick = parse_pick(reply.text, data.get("eligible", []))
            except InvalidPickError as exc:
                # A pick outside the eligible set is an error, never silently replaced.
                return storage.TurnCommit(
                    event_id=turn.id,  # type: ignore[arg-type]
                    token=token,
                    state="failed",
                    content=reply.text,
                    error=error_record(exc),
                    **usage,
                )
            return storage.TurnCommit(
                event_id=turn.id,  # type: ignore[arg-type]
                token=token,
                state="done",
                kind="agent",
                content=f"picked {pick}" if pick else "picked no one",
                data={"pick": pick},
                error=None,
                **usage,
            )
        passed = is_pass(reply.text)
        return storage.TurnCommit(
            event_id=turn.id,  # type: ignore[arg-type]
            token=token,
            state="waiting" if config.moderated and not passed else "done",
            kind="pass" if passed else "agent",
            content="" if passed else reply.text,
            error=None,
            **usage,
        )

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
            turn.id,  # type: ignore[arg-type]
            token,
            state="interrupted" if transient else "failed",
            error=record,
            attempts=attempts,
            next_attempt_at=None,
        )
        reason = failure_reason(turn, record)
        log.warning("room %s: %s", room_id, reason)
        return self._set_status(room_id, token, "failed", reason)

    async def _keep_lease(self, room_id: int, token: int) -> None:
        """Renew the lease while a model call runs (a slow call must not lose the room)."""
        while True:
            await asyncio.sleep(self.lease_ttl / 3)
            if not storage.renew_lease(self.db, room_id, self.owner, token, self.lease_ttl):
                return


def settlement(room_id: int, token: int, settled: Settled) -> storage.RoomSettlement:
    """The storage settlement of a settled room (a terminated room gets its reason as an event,
    kept with the event that ended it)."""
    notice = data = None
    if settled.status == "terminated":
        notice = f"Stopped: {settled.reason}"
        data = {"event": "terminated", "reason": settled.reason}
    return storage.RoomSettlement(
        room_id=room_id,
        token=token,
        status=settled.status,
        stop_reason=settled.reason,
        notice=notice,
        notice_data=data,
    )


def failure_reason(turn: storage.Event, record: Mapping[str, Any] | None = None) -> str:
    """The room's stop reason when one of its turns failed."""
    error = record or turn.error or {}
    return (
        f"{turn.speaker}'s turn (seq {turn.seq}) failed: "
        f"{error.get('type', 'error')}: {error.get('message', '')}"
    )


def owner_id(role: str = "room") -> str:
    """A lease owner name unique to this process and object."""
    import socket
    import uuid

    return f"{role}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


__all__ = [
    "settlement",
    "Decision",
    "Reply",
    "committed_event",
    "FAULT_ENV",
    "FAULT_POINTS",
    "Settled",
    "TurnDriver",
    "error_record",
    "owner_id",
]
