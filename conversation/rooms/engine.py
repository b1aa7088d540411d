"""The one turn engine: decide, claim, call the model outside any transaction, commit with a fence
(DESIGN decisions 2 and 10.1).

Every path that takes turns uses it: ``Room.step`` / ``Room.run`` (one room, ``Engine.step``), the
in-app runner and ``python -m conversation.worker`` (many rooms, the same phases batched). A step
of a room is:

1. **plan** (``Engine.plan``, no writes): from the room's row and its log, what the room needs
   now, as a tagged ``Plan``: ``settle`` (nothing to do: settled / terminated), ``claim`` (a new
   turn, with its prompt), ``resume`` (its open ``running`` turn, found after a crash or a denial,
   with a prompt rebuilt from the events *before* it), ``wait`` (nothing to do now: a draft waits
   for a person, the room is paused, ...) or ``fail`` (it cannot go on: a turn was interrupted, or
   the next turn cannot be planned or prompted, ``PLAN_ATTEMPTS`` times in a row);
2. **begin** (``Engine.begin``, for a batch of held rooms): one read of every room's new log rows,
   a plan each, then one write for every settlement and one for every claim (each fenced by its
   room's lease token, refused on its own);
3. **call** (``Engine.call``): the model, with no transaction open, retrying transient failures
   with a growing backoff; every failed try is persisted (attempts, next attempt time) first, so
   a restart does not reset the retry budget;
4. **finish** (``Engine.finish``): one group commit of the replies, each fenced by its lease
   token; the room's next status (``waiting`` for a draft, ``failed``) is written in the same
   transaction as the turn.

The result of a step is a tagged ``Step`` (the same tags as ``Plan``). A refused claim (the log
moved: a human message landed) may be retried at once, ``MAX_REFUSALS`` times in a row (one
refusal rule for every caller); after any refusal or a lost lease the room's cached log is dropped
and read whole next time.

Exactly-once holds for the transcript, not for the model call: a turn resumed after a crash asks
the model again, with the same prompt; with the room's model cache on (``RoomConfig.use_cache``,
the default) that answer comes from the database's cache when the first call was answered, at no
cost. Every turn records ``data["cache_hit"]``.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import storage
from conversation import models
from conversation.context.window import SUMMARY_SPEAKER, summary_request
from conversation.models.bindings import ModelCache
from conversation.models.retries import (
    TRANSIENT_HTTP_STATUSES,
    backoff_delay,
    http_status,
    is_transient,
)
from conversation.models.stored_cache import StoredCache
from conversation.planning.coordinator import CoordinatorPolicy, InvalidPickError, parse_pick
from conversation.planning.planner import plan_turn
from conversation.rooms.breakpoints import breakpoint_pause, released
from conversation.rooms.config import RoomConfig
from conversation.rooms.log import LogView, RoomLog, covers_seqs, turn_request_id
from conversation.rooms.prompt import (
    TurnPrompt,
    build_candidates_prompt,
    build_pick_prompt,
    build_summary_prompt,
    build_turn_prompt,
    denial_feedback,
    is_pass,
    room_template,
)
from conversation.termination.budget import Budget, Spend
from conversation.vocabulary import NoticeKind, RoomStatus, TurnKind, TurnState, kind_of

log = logging.getLogger(__name__)

#: Environment variable naming a point of a turn at which the process kills itself (crash tests).
FAULT_ENV = "CONVERSATION_FAULT_POINT"
FAULT_POINTS = ("after_claim", "during_call", "after_answer", "before_commit")

#: A room whose next turn cannot be planned or prompted this many times in a row is failed.
PLAN_ATTEMPTS = 3
#: Claims refused in a row (the log kept moving) before a caller gives the room up for now.
MAX_REFUSALS = 3
#: How long an engine trusts an experiment's budget as read (a changed budget applies after this).
BUDGET_TTL_SECONDS = 5.0
#: The speaker of a coordinator-after turn while its drafts are written, when the coordinator is
#: a person (the row then takes the chosen agent's name).
COORDINATOR_SPEAKER = "coordinator"


def _fault(point: str) -> None:
    if os.environ.get(FAULT_ENV) == point:  # a test hook: never set outside the crash tests
        os.kill(os.getpid(), signal.SIGKILL)


class StepKind(StrEnum):
    """What a step of a room is (or did)."""

    SETTLE = "settle"
    """The room has nothing to do: its final status (settled / terminated) is written."""
    CLAIM = "claim"
    """A new turn: claimed (plan), then called and committed (step)."""
    RESUME = "resume"
    """The room's open running turn: called again and committed."""
    WAIT = "wait"
    """Nothing to do now and nothing written (a person must act, the room is not running, the
    lease is gone, or a claim was refused: see ``Step.again``)."""
    FAIL = "fail"
    """The room cannot go on: it is failed, with the reason stored."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What a room needs now (see ``StepKind``); no writes were made to decide it."""

    kind: StepKind
    status: RoomStatus | None = None  # settle / fail: the status to write; wait: the room's
    reason: str | None = None
    write: bool = True  # settle: False when the room is already in that status
    config: RoomConfig | None = None
    claim: storage.TurnClaim | None = None
    turn: storage.Event | None = None  # resume: the open turn
    prompt: TurnPrompt | None = None
    again: bool = False  # wait: planning again at once may take a turn
    drafting: Drafting | None = None  # claim / resume of a coordinator-after turn
    notice_data: dict[str, Any] | None = None  # settle: the data of its notice (a breakpoint)


@dataclass(frozen=True, slots=True)
class Drafting:
    """A coordinator-after turn: every eligible agent's draft prompt, and who picks among the
    drafts (a roster agent, asked with the ``view`` it reads; None: a person picks)."""

    prompts: tuple[tuple[str, TurnPrompt], ...]
    coordinator: str | None
    view: LogView


@dataclass(frozen=True, slots=True)
class Step:
    """What one step did: the tag, the room's status after it, why, and the committed turn."""

    kind: StepKind
    status: str
    reason: str | None = None
    turn: storage.Event | None = None
    again: bool = False  # nothing was done, but stepping again at once may take a turn


@dataclass(slots=True)
class HeldRoom:
    """The one per-room record of a caller holding a room's lease: its token, its log (kept
    current between steps, ``None`` to read it whole), and the refusal and failure counters."""

    room_id: int
    token: int
    log: RoomLog | None = None
    room: storage.Room | None = None  # the room's row as last read
    pending: Call | None = None  # the next turn, claimed together with the last commit
    refusals: int = 0
    plan_failures: int = 0
    rules: RoomRules | None = None  # the room's config as last read, and what it builds

    def rules_of(self, room: storage.Room) -> RoomRules:
        """The room's rules, built again only when its stored config changed (a worker reads
        the same config on every turn; validating it and building its planner each time would
        cost more than the rest of the turn)."""
        if self.rules is None or self.rules.source != room.config:
            self.rules = RoomRules.of(room.config)
        return self.rules

    def forget_log(self) -> None:
        """Read the log whole next time (after a refusal or a lost lease it may be stale)."""
        self.log = None
        self.pending = None


@dataclass(frozen=True, slots=True)
class RoomRules:
    """A stored config validated, with the planner and stop rule it builds (both immutable)."""

    source: Mapping[str, Any]
    config: RoomConfig
    planner: Any
    condition: Any
    resolved: dict[str, Any] = dataclasses.field(default_factory=dict)  # speaker -> model

    def model_for(self, speaker: str, models: ModelCache) -> Any:
        """The model that answers for ``speaker`` (resolved once per config)."""
        model = self.resolved.get(speaker)
        if model is None:
            model = self.resolved[speaker] = models.get(self.config.model_of(speaker))
        return model

    @classmethod
    def of(cls, source: Mapping[str, Any]) -> RoomRules:
        config = RoomConfig.from_dict(source)
        return cls(
            copy.deepcopy(dict(source)),
            config,
            config.planner_object(),
            config.termination_object(),
        )


@dataclass(frozen=True, slots=True)
class Call:
    """A turn ready to be asked of its model: claimed (or found running) and its prompt."""

    held: HeldRoom
    kind: StepKind
    config: RoomConfig
    turn: storage.Event
    prompt: TurnPrompt
    drafting: Drafting | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A model reply for a turn, and the attempts it took; for a coordinator-after turn, every
    drafted candidate, who was picked, and whether the pick is made (or waits for a person)."""

    reply: models.ModelReply
    attempts: int
    candidates: tuple[dict[str, Any], ...] = ()
    picked: str | None = None
    decided: bool = True


def error_record(exc: BaseException) -> dict[str, Any]:
    """The ``{type, code, message}`` stored on a failed turn (never a secret: messages only)."""
    status = http_status(exc)
    code = getattr(exc, "code", None)
    if not isinstance(code, str):
        code = str(status) if status is not None else None
    return {"type": type(exc).__name__, "code": code, "message": str(exc)[:2000]}


def committed_event(turn: storage.Event, commit: storage.TurnCommit) -> storage.Event:
    """The turn as ``commit`` left it (no read back from the database)."""
    update = {
        **commit.given(),
        "next_attempt_at": None,
        "data": {**(turn.data or {}), **(commit.data or {})},
    }
    return turn.model_copy(update=update)


def failure_reason(turn: storage.Event, record: Mapping[str, Any] | None = None) -> str:
    """The room's stop reason when one of its turns failed."""
    error = record or turn.error or {}
    return (
        f"{turn.speaker}'s turn (seq {turn.seq}) failed: "
        f"{error.get('type', 'error')}: {error.get('message', '')}"
    )


def settlement(
    room_id: int,
    token: int,
    status: str,
    reason: str | None,
    notice_data: dict[str, Any] | None = None,
    *,
    expected_last_seq: int | None,
) -> storage.RoomSettlement:
    """The storage settlement of a room (a terminated or failed room gets its reason as a system
    event too, kept with the event that ended it; so does a room a breakpoint pauses).

    ``expected_last_seq``: the last seq of the log the plan read; the write is refused if the
    log grew meanwhile (a person's message must be planned for, not settled over)."""
    notice = data = None
    if status == RoomStatus.PAUSED and reason:
        notice, data = reason, notice_data
    elif status == RoomStatus.TERMINATED:
        notice = f"Stopped: {reason}"
        data = {"event": NoticeKind.TERMINATED, "reason": reason}
    elif status == RoomStatus.FAILED and reason:
        notice = f"Failed: {reason}"
        data = {"event": NoticeKind.FAILED, "reason": reason}
    return storage.RoomSettlement(
        room_id=room_id,
        token=token,
        status=status,
        expected_last_seq=expected_last_seq,
        stop_reason=reason,
        notice=notice,
        notice_data=data,
    )


def _seen_seq(held: HeldRoom) -> int | None:
    """The last seq of the log a room's plan was made from (None: no log was read)."""
    return held.log.last_seq if held.log is not None else None


def owner_id(role: str = "room") -> str:
    """A lease owner name unique to this process and object."""
    import socket
    import uuid

    return f"{role}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Engine:
    """Takes turns of rooms for one lease owner (a worker, or a ``Room`` object)."""

    def __init__(
        self,
        db: storage.Database,
        owner: str,
        *,
        lease_ttl: float = 60.0,
        cache: Any = None,
        models: ModelCache | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.db = db
        self.owner = owner
        self.lease_ttl = lease_ttl
        self.cache = cache
        self.models = models or ModelCache()
        self._now = clock or (lambda: datetime.now(UTC))
        self._stored_cache: StoredCache | None = None
        self._budgets: dict[int, tuple[float, Budget | None]] = {}

    def cache_for(self, config: RoomConfig) -> Any:
        """The cache a room's calls use: none when the room turned it off, else the caller's
        ``cache``, else the database's model cache (shared by every process)."""
        if not config.use_cache:
            return None
        if self.cache is not None:
            return self.cache
        if self._stored_cache is None:
            self._stored_cache = StoredCache(self.db)
        return self._stored_cache

    # -- 1. plan ----------------------------------------------------------------------------------

    def plan(self, room: storage.Room, held: HeldRoom) -> Plan:
        """What the room needs now, from its row and ``held.log`` (no writes; see ``Plan``).

        An error while planning or prompting counts against the room: after ``PLAN_ATTEMPTS`` in
        a row the plan is ``fail`` with the error as the reason (logged once), so a broken room
        never loops and never starves the others."""
        try:
            plan = self._plan(room, held)
        except Exception as exc:  # noqa: BLE001 - any error of this room's data fails this room only
            held.plan_failures += 1
            reason = f"its next turn cannot be planned: {type(exc).__name__}: {exc}"[:2000]
            if held.plan_failures < PLAN_ATTEMPTS:
                log.debug("room %s: %s (try %d)", held.room_id, reason, held.plan_failures)
                return Plan(
                    StepKind.WAIT, status=RoomStatus(room.status), reason=reason, again=True
                )
            log.warning("room %s failed: %s", held.room_id, reason)
            return Plan(StepKind.FAIL, status=RoomStatus.FAILED, reason=reason)
        held.plan_failures = 0
        return plan

    def _with_log(self, room: storage.Room, held: HeldRoom, new_rows: list[storage.Event]) -> Plan:
        """Bring ``held.log`` up to date with the rows just read, then plan."""
        try:
            names = held.rules_of(room).config.names
        except Exception:  # noqa: BLE001 - a broken config is the plan's failure to report
            names = ()
        if held.log is None:
            held.log = RoomLog(names, new_rows)
        elif held.log.roster != names:  # the roster changed: the view is built again
            held.log = RoomLog(names, [*held.log.rows, *new_rows])
        else:
            held.log.extend(new_rows)
        return self.plan(room, held)

    def _plan(self, room: storage.Room, held: HeldRoom) -> Plan:
        if room.status != RoomStatus.RUNNING:
            return Plan(StepKind.WAIT, status=RoomStatus(room.status), reason=room.stop_reason)
        rules = held.rules_of(room)
        config = rules.config
        assert held.log is not None
        rows = held.log.rows
        open_row = held.log.open_turn
        if open_row is not None:
            if open_row.state == TurnState.WAITING:
                return Plan(StepKind.SETTLE, status=RoomStatus.WAITING)
            if open_row.state == TurnState.INTERRUPTED:
                return Plan(StepKind.FAIL, status=RoomStatus.FAILED, reason=room.stop_reason)
            data = open_row.data or {}
            if kind_of(data) == TurnKind.CANDIDATES:
                planner = rules.planner
                assert isinstance(planner, CoordinatorPolicy)
                before = held.log.view(before_seq=open_row.seq)
                drafting = self._drafting(config, before, planner, data.get("eligible", []))
                return Plan(
                    StepKind.RESUME,
                    config=config,
                    turn=open_row,
                    prompt=drafting.prompts[0][1],
                    drafting=drafting,
                )
            prompt = self._resumed_prompt(config, held.log, open_row)
            return Plan(StepKind.RESUME, config=config, turn=open_row, prompt=prompt)
        view = held.log.view()
        over = self._over_budget(room, config, held)
        if over is not None:
            return Plan(StepKind.SETTLE, status=RoomStatus.TERMINATED, reason=over)
        condition = rules.condition
        if condition is not None:
            decision = condition.evaluate(view.state())
            if decision is not None:
                return Plan(StepKind.SETTLE, status=RoomStatus.TERMINATED, reason=decision.reason)
        planner = rules.planner
        planned = plan_turn(planner, config.names, view.events)
        if planned is None:
            return Plan(StepKind.SETTLE, status=RoomStatus.SETTLED)
        # Breakpoints, like moderation, are a rule of the room's config read at each turn: the
        # room pauses here, before any claim or model call (see rooms/breakpoints.py).
        pause = breakpoint_pause(config, rows, planned.speaker)
        if pause is not None:
            return Plan(
                StepKind.SETTLE,
                status=RoomStatus.PAUSED,
                reason=pause.reason,
                notice_data=pause.data,
            )
        because = planned.reason or "chosen by the planner"
        releaser = released(rows, planned.speaker)
        if releaser is not None:
            because = f"{because}; breakpoint released by {releaser}"
        last = rows[-1] if rows else None
        common: dict[str, Any] = {
            "room_id": held.room_id,
            "token": held.token,
            "expected_last_seq": view.last_seq,
            "request_id": turn_request_id(view.last_seq + 1),
            "activity": last.activity if last is not None else 0,
            "parent_event_id": last.id if last is not None else None,
        }
        policy = config.context_policy()
        if policy.summarize:
            summary = build_summary_prompt(config, view)
            if summary is not None:
                # The turn that summarises what fell out of the window (asked of the room's model
                # once, stored as a summary event, replayed after).
                request = summary_request(config.names, view.events, policy)
                assert request is not None
                claim = storage.TurnClaim(
                    **common,
                    speaker=SUMMARY_SPEAKER,
                    round=last.round if last is not None else 0,
                    saw=list(summary.saw),
                    model=models.model_label(self.models.get(config.model)),
                    data={
                        "event": TurnKind.SUMMARY,
                        "covers_seqs": covers_seqs(view, request.covers),
                    },
                )
                return Plan(StepKind.CLAIM, config=config, claim=claim, prompt=summary)
        if isinstance(planner, CoordinatorPolicy) and not planned.mention:
            drafters = planner.candidates_needed(config.names, view.events)
            if drafters:
                drafting = self._drafting(config, view, planner, drafters)
                claim = storage.TurnClaim(
                    **common,
                    speaker=planner.coordinator or COORDINATOR_SPEAKER,
                    round=planned.round,
                    saw=sorted({s for _, p in drafting.prompts for s in p.saw}),
                    model=models.model_label(self.models.get(config.model)),
                    data={"event": TurnKind.CANDIDATES, "eligible": list(drafters)},
                )
                return Plan(
                    StepKind.CLAIM,
                    config=config,
                    claim=claim,
                    prompt=drafting.prompts[0][1],
                    drafting=drafting,
                )
        data = None
        eligible = (
            planner.pick_needed(config.names, view.events)
            if isinstance(planner, CoordinatorPolicy) and not planned.mention
            else None
        )
        if eligible is not None:
            # The coordinator's turn is to pick, not to speak; the pick is stored with the turn,
            # so a replay reads it and never asks again.
            prompt = build_pick_prompt(config, view, planned.speaker, eligible)
            data = {"event": TurnKind.PICK, "eligible": list(eligible)}
        else:
            prompt = build_turn_prompt(
                config,
                view,
                planned.speaker,
                template=room_template(config),
                addressee=planned.addressee,
            )
            data = {"chosen_because": because}
            if planned.addressee is not None:
                data["addressee"] = planned.addressee
        spec = config.spec(planned.speaker)
        claim = storage.TurnClaim(
            **common,
            speaker=planned.speaker,
            round=planned.round,
            saw=list(prompt.saw),
            model=models.model_label(rules.model_for(spec.name, self.models)),
            data=data,
        )
        return Plan(StepKind.CLAIM, config=config, claim=claim, prompt=prompt)

    def _over_budget(self, room: storage.Room, config: RoomConfig, held: HeldRoom) -> str | None:
        """Why no new turn may start (the room's or its experiment's budget is spent), or None.

        The room's spend comes from its log (current, including a reply not yet committed); the
        rest of an experiment's from one aggregate query over its other rooms, made only when
        the experiment has a budget (read at most every ``BUDGET_TTL_SECONDS``)."""
        if config.budget is None and room.experiment_id is None:
            return None
        assert held.log is not None
        spent = held.log.spent()
        if config.budget is not None:
            reason = config.budget.reached(spent)
            if reason is not None:
                return reason
        if room.experiment_id is None:
            return None
        budget = self._experiment_budget(room.experiment_id)
        if budget is None:
            return None
        tokens, dollars = storage.experiment_spend(
            self.db, room.experiment_id, excluding_room=held.room_id
        )
        return budget.reached(spent + Spend(tokens, dollars), scope="experiment budget")

    def _experiment_budget(self, experiment_id: int) -> Budget | None:
        """The experiment's budget from its stored design (``config["budget"]``, written by
        ``experiments.design.design``)."""
        now = time.monotonic()
        known = self._budgets.get(experiment_id)
        if known is not None and known[0] > now:
            return known[1]
        try:
            config = storage.get_experiment(self.db, experiment_id).config
        except storage.ExperimentNotFound:
            config = {}
        budget = Budget.from_dict((config or {}).get("budget"), field="experiment budget")
        self._budgets[experiment_id] = (now + BUDGET_TTL_SECONDS, budget)
        return budget

    def _drafting(
        self, config: RoomConfig, view: LogView, planner: CoordinatorPolicy, drafters: Sequence[str]
    ) -> Drafting:
        template = room_template(config)
        prompts = tuple(
            (name, build_turn_prompt(config, view, name, template=template)) for name in drafters
        )
        coordinator = planner.coordinator if planner.coordinator in config.names else None
        return Drafting(prompts, coordinator, view)

    def _resumed_prompt(
        self, config: RoomConfig, room_log: RoomLog, turn: storage.Event
    ) -> TurnPrompt:
        """A resumed turn's prompt: rebuilt from the events before it, and only those."""
        before = room_log.view(before_seq=turn.seq)
        data = turn.data or {}
        if kind_of(data) == TurnKind.SUMMARY:
            prompt = build_summary_prompt(config, before)
            # Nothing to summarise any more: the turn ends as an empty pass (see commit_for).
            return prompt if prompt is not None else TurnPrompt("", "", ())
        if kind_of(data) == TurnKind.PICK:
            return build_pick_prompt(config, before, turn.speaker, data.get("eligible", []))
        return build_turn_prompt(
            config,
            before,
            turn.speaker,
            template=room_template(config),
            feedback=denial_feedback(data.get("denials", [])),
            addressee=data.get("addressee"),
        )

    # -- 2. begin ---------------------------------------------------------------------------------

    def begin(self, held_rooms: Sequence[HeldRoom], *, claim: bool = True) -> list[Call | Step]:
        """Plan every held room from one read of their new log rows, then write every settlement
        in one transaction and every claim in another. One result per room, in order: a ``Call``
        to make, or the ``Step`` that ends this step of the room. With ``claim=False`` nothing is
        claimed (a room that would take a turn is a ``wait``): used to settle a room's status at
        once after a caller stopped by count."""
        if not held_rooms:
            return []
        logs = storage.room_logs(
            self.db,
            [h.room_id for h in held_rooms],
            after_seq={h.room_id: h.log.last_seq for h in held_rooms if h.log is not None},
        )
        results: list[Call | Step | None] = [None] * len(held_rooms)
        settling: list[tuple[int, Plan]] = []
        claiming: list[tuple[int, Plan]] = []
        for index, held in enumerate(held_rooms):
            found = logs.get(held.room_id)
            if found is None:
                results[index] = Step(StepKind.WAIT, "deleted", "the room no longer exists")
                continue
            room, new_rows = found
            held.room = room
            plan = self._with_log(room, held, new_rows)
            if plan.kind in (StepKind.SETTLE, StepKind.FAIL):
                if plan.write:
                    settling.append((index, plan))
                else:
                    results[index] = Step(plan.kind, str(plan.status), plan.reason)
            elif plan.kind == StepKind.WAIT:
                results[index] = Step(
                    StepKind.WAIT, str(plan.status), plan.reason, again=plan.again
                )
            elif plan.kind == StepKind.RESUME:
                assert plan.turn is not None and plan.config is not None and plan.prompt
                if storage.lease_is_current(self.db, held.room_id, held.token):
                    # Only a current lease holder may spend money on an open turn (it may be
                    # another worker's, claimed after this one's lease ran out).
                    results[index] = Call(
                        held, plan.kind, plan.config, plan.turn, plan.prompt, plan.drafting
                    )
                else:
                    held.forget_log()
                    results[index] = Step(StepKind.WAIT, "running", "lease lost")
            elif claim:
                claiming.append((index, plan))
            else:
                results[index] = Step(StepKind.WAIT, "running", "a turn is due")
        self._settle(held_rooms, settling, results)
        self._claim(held_rooms, claiming, results)
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    def _settle(
        self,
        held_rooms: Sequence[HeldRoom],
        settling: Sequence[tuple[int, Plan]],
        results: list[Call | Step | None],
    ) -> None:
        if not settling:
            return
        applied = storage.settle_rooms(
            self.db,
            [
                settlement(
                    held_rooms[i].room_id,
                    held_rooms[i].token,
                    str(p.status),
                    p.reason,
                    p.notice_data,
                    expected_last_seq=_seen_seq(held_rooms[i]),
                )
                for i, p in settling
            ],
        )
        for (index, plan), ok in zip(settling, applied, strict=True):
            held = held_rooms[index]
            if ok:
                held.refusals = 0
                results[index] = Step(plan.kind, str(plan.status), plan.reason)
            else:
                # The room moved meanwhile (a person posted or acted) or the lease is gone: plan
                # again at once from a fresh read, a few times, as for a refused claim.
                held.refusals += 1
                held.forget_log()
                results[index] = Step(
                    StepKind.WAIT,
                    "running",
                    "settlement refused",
                    again=held.refusals <= MAX_REFUSALS,
                )

    def _claim(
        self,
        held_rooms: Sequence[HeldRoom],
        claiming: Sequence[tuple[int, Plan]],
        results: list[Call | Step | None],
    ) -> None:
        if not claiming:
            return
        claimed = storage.claim_turns(self.db, [p.claim for _, p in claiming])  # type: ignore[misc]
        for (index, plan), turn in zip(claiming, claimed, strict=True):
            held = held_rooms[index]
            if turn is None:
                # The log moved (plan again at once, a few times) or the lease is gone.
                held.refusals += 1
                held.forget_log()
                results[index] = Step(
                    StepKind.WAIT, "running", "claim refused", again=held.refusals <= MAX_REFUSALS
                )
                continue
            held.refusals = 0
            assert held.log is not None and plan.config is not None and plan.prompt is not None
            held.log.extend([turn])
            _fault("after_claim")
            results[index] = Call(
                held, StepKind.CLAIM, plan.config, turn, plan.prompt, plan.drafting
            )

    # -- 3. call ----------------------------------------------------------------------------------

    async def call(self, call: Call, *, renew: bool = True) -> Reply | Step:
        """Ask the model for the turn, retrying transient failures.

        Every failed try is persisted first (attempts, next attempt time). A turn that cannot
        succeed is written as interrupted/failed here, with the room failed in the same write
        (a ``fail`` step). With ``renew``, the lease is renewed while the call runs (a worker
        renews its leases itself)."""
        held, turn, config, prompt = call.held, call.turn, call.config, call.prompt
        rules = held.rules
        if rules is not None and rules.config is config:
            model = rules.model_for(turn.speaker, self.models)
        else:
            model = self.models.get(config.model_of(turn.speaker))
        attempts = turn.attempts
        if not prompt.user_prompt:  # a resumed summary with nothing left to summarise
            nothing = models.ModelReply(
                "", models.model_label(model), 0, 0, 0.0, False, None, 0.0, None
            )
            return Reply(nothing, attempts)
        if turn.next_attempt_at is not None:
            wait = (turn.next_attempt_at - self._now()).total_seconds()
            if wait > 0:
                await asyncio.sleep(min(wait, 60.0))
        renewer = asyncio.ensure_future(self._keep_lease(held)) if renew else None
        try:
            while True:
                try:
                    _fault("during_call")
                    if call.drafting is not None:
                        drafted = await self._draft_and_pick(call.config, call.drafting)
                        reply = drafted.reply
                        break
                    reply = await models.ask(
                        model,
                        user_prompt=prompt.user_prompt,
                        system_prompt=prompt.system_prompt,
                        cache=self.cache_for(config),
                        iteration=config.cache_iteration,
                        settings=config.call_settings(turn.speaker),
                    )
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    attempts += 1
                    transient = is_transient(exc, TRANSIENT_HTTP_STATUSES)
                    if transient and attempts < config.retry.max_attempts:
                        delay = backoff_delay(config.retry.base_delay, attempts, exc)
                        recorded = storage.record_attempt(
                            self.db,
                            turn.id,  # type: ignore[arg-type]
                            held.token,
                            error=error_record(exc),
                            next_attempt_at=self._now() + timedelta(seconds=delay),
                        )
                        if recorded is None:  # stopped by a person, or the lease is gone
                            held.forget_log()
                            return Step(StepKind.WAIT, "running", "turn no longer ours")
                        await asyncio.sleep(delay)
                        continue
                    return self._fail(held, turn, exc, attempts, transient)
        finally:
            if renewer is not None:
                renewer.cancel()
        _fault("after_answer")
        if call.drafting is not None:
            return Reply(reply, attempts + 1, drafted.candidates, drafted.picked, drafted.decided)
        return Reply(reply, attempts + 1)

    async def _draft_and_pick(self, config: RoomConfig, drafting: Drafting) -> Reply:
        """A coordinator-after turn: every eligible agent drafts (concurrently, each with its own
        model), then the coordinator agent's model picks one draft; with no coordinator agent
        the pick is left to a person (``decided=False``). The reply is the chosen draft, with the
        usage of every call added up."""

        async def draft(name: str, prompt: TurnPrompt) -> models.ModelReply:
            own = config.spec(name).model
            return await models.ask(
                self.models.get(own or config.model),
                user_prompt=prompt.user_prompt,
                system_prompt=prompt.system_prompt,
                cache=self.cache_for(config),
                iteration=config.cache_iteration,
            )

        replies = await asyncio.gather(*(draft(n, p) for n, p in drafting.prompts))
        candidates: tuple[dict[str, Any], ...] = tuple(
            {"speaker": name, "text": reply.text, "passed": is_pass(reply.text)}
            for (name, _), reply in zip(drafting.prompts, replies, strict=True)
        )
        offered = [c for c in candidates if not c["passed"]]
        calls = list(replies)
        picked: str | None = None
        decided = drafting.coordinator is not None and bool(offered)
        if drafting.coordinator is not None and offered:
            prompt = build_candidates_prompt(config, drafting.view, drafting.coordinator, offered)
            answer = await draft(drafting.coordinator, prompt)
            calls.append(answer)
            picked = parse_pick(answer.text, [c["speaker"] for c in offered])
        chosen = next((c for c in offered if c["speaker"] == picked), None)
        total = models.ModelReply(
            chosen["text"] if chosen is not None else "",
            replies[[n for n, _ in drafting.prompts].index(picked)].model_name
            if picked is not None
            else calls[-1].model_name,
            sum(r.input_tokens or 0 for r in calls),
            sum(r.output_tokens or 0 for r in calls),
            sum(r.cost or 0.0 for r in calls),
            all(r.cache_used for r in calls),
            None,
            max(r.latency for r in calls),
            None,
        )
        return Reply(total, 0, candidates, picked, decided)

    def _fail(
        self,
        held: HeldRoom,
        turn: storage.Event,
        exc: BaseException,
        attempts: int,
        transient: bool,
    ) -> Step:
        """A turn that cannot succeed now: ``interrupted`` (transient, retry budget spent: a person
        may resume it) or ``failed`` (the same call would fail again). The room fails with it, in
        the same write."""
        record = error_record(exc)
        reason = failure_reason(turn, record)
        applied = storage.commit_turns(
            self.db,
            [
                storage.TurnCommit(
                    event_id=turn.id,  # type: ignore[arg-type]
                    token=held.token,
                    state=TurnState.INTERRUPTED if transient else TurnState.FAILED,
                    error=record,
                    attempts=attempts,
                    next_attempt_at=None,
                    room_status=RoomStatus.FAILED,
                    stop_reason=reason,
                )
            ],
        )[0]
        held.forget_log()
        if not applied:
            return Step(StepKind.WAIT, "running", "commit refused by the fence")
        log.warning("room %s: %s", held.room_id, reason)
        return Step(StepKind.FAIL, RoomStatus.FAILED, reason)

    async def _keep_lease(self, held: HeldRoom) -> None:
        """Renew the lease while a model call runs (a slow call must not lose the room)."""
        while True:
            await asyncio.sleep(self.lease_ttl / 3)
            if not storage.renew_lease(
                self.db, held.room_id, self.owner, held.token, self.lease_ttl
            ):
                return

    # -- 4. finish --------------------------------------------------------------------------------

    def finish(
        self, replies: Sequence[tuple[Call, Reply]], *, claim_next: bool = True
    ) -> list[Step]:
        """Commit every reply in one transaction (a group commit, each fenced on its own, each
        with its room's next status); one ``Step`` per reply, in order.

        In the same transaction, each room that goes on gets what its next plan needs, planned
        from the log as this commit leaves it: the claim of its next turn (kept as
        ``held.pending``, so the next step calls the model at once) or its settlement (settled,
        terminated). One write per turn instead of two; a human message that landed meanwhile
        makes that claim refused by its expected last seq, and the next step plans again. With
        ``claim_next=False`` (the caller takes no more turns now) only settlements follow."""
        if not replies:
            return []
        _fault("before_commit")
        commits = [self.commit_for(call, reply) for call, reply in replies]
        events = [
            committed_event(call.turn, commit)
            for (call, _), commit in zip(replies, commits, strict=True)
        ]
        follow: list[tuple[int, Plan]] = []
        for index, ((call, _), commit, event) in enumerate(
            zip(replies, commits, events, strict=True)
        ):
            held = call.held
            if held.log is None or not held.log.rows or held.log.rows[-1].id != event.id:
                held.forget_log()
                continue
            held.log.replace_last(event)  # undone (forgotten) below if the commit is refused
            if commit.room_status is None and held.room is not None:
                upcoming = self.plan(held.room, held)
                wanted = (StepKind.SETTLE, StepKind.FAIL, StepKind.CLAIM)[: 3 if claim_next else 2]
                # A breakpoint's pause is not written with this commit: the settings may have
                # changed while the turn ran (a claim would be refused by its expected seq; a
                # settlement is not), so the next step decides it from a fresh read.
                breakpoint = upcoming.status == RoomStatus.PAUSED
                if upcoming.kind in wanted and upcoming.write and not breakpoint:
                    follow.append((index, upcoming))
        claims = [(i, p) for i, p in follow if p.kind == StepKind.CLAIM]
        settles = [(i, p) for i, p in follow if p.kind != StepKind.CLAIM]
        applied, settled, claimed = storage.apply_turns(
            self.db,
            commits=commits,
            settlements=[
                settlement(
                    replies[i][0].held.room_id,
                    replies[i][0].held.token,
                    str(p.status),
                    p.reason,
                    p.notice_data,
                    expected_last_seq=_seen_seq(replies[i][0].held),
                )
                for i, p in settles
            ],
            claims=[p.claim for _, p in claims],  # type: ignore[misc]
        )
        after: dict[int, tuple[Plan | None, bool | storage.Event | None]] = {}
        for (index, settling), ok in zip(settles, settled, strict=True):
            after[index] = (settling, ok)
        for (index, claiming), turn in zip(claims, claimed, strict=True):
            after[index] = (claiming, turn)
        steps = []
        for index, ((call, _), commit, event, ok) in enumerate(
            zip(replies, commits, events, applied, strict=True)
        ):
            held = call.held
            if not ok:  # fenced out: stopped by a person, or the lease was lost
                held.forget_log()
                steps.append(Step(StepKind.WAIT, "running", "commit refused by the fence"))
                continue
            status: str = commit.room_status or RoomStatus.RUNNING
            reason = commit.stop_reason
            plan, outcome = after.get(index, (None, None))
            if plan is not None and plan.kind == StepKind.CLAIM:
                if isinstance(outcome, storage.Event) and held.log is not None:
                    held.log.extend([outcome])
                    assert plan.config is not None and plan.prompt is not None
                    held.pending = Call(
                        held, StepKind.CLAIM, plan.config, outcome, plan.prompt, plan.drafting
                    )
                    _fault("after_claim")
                else:  # refused (the log moved): plan again from a fresh read
                    held.forget_log()
            elif plan is not None and outcome:
                status, reason = str(plan.status), plan.reason
                held.forget_log()  # its notice was appended: read it with the log next time
            kind = StepKind.FAIL if status == RoomStatus.FAILED else call.kind
            steps.append(Step(kind, status, reason, turn=event))
        return steps

    def commit_for(self, call: Call, outcome: Reply) -> storage.TurnCommit:
        """The fenced commit of a reply: ``done`` (``waiting``, with the room, in a moderated
        room), a pass, a coordinator's pick, or a context summary; ``data["cache_hit"]`` says
        whether the answer came from the model cache."""
        commit = self._commit_for(call, outcome)
        hit = {"cache_hit": outcome.reply.cache_used}
        return dataclasses.replace(commit, data={**(commit.data or {}), **hit})

    def _commit_for(self, call: Call, outcome: Reply) -> storage.TurnCommit:
        turn, reply = call.turn, outcome.reply
        base: dict[str, Any] = {
            "event_id": turn.id,
            "token": call.held.token,
            "model": reply.model_name,
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cost": reply.cost,
            "latency": reply.latency,
            "attempts": outcome.attempts,
            "next_attempt_at": None,
            "error": None,
        }
        data = turn.data or {}
        if kind_of(data) == TurnKind.CANDIDATES:
            return self._candidates_commit(call, outcome, base)
        if kind_of(data) == TurnKind.SUMMARY:
            if not reply.text.strip():  # nothing to summarise: an empty pass, not a summary
                return storage.TurnCommit(
                    **base, state=TurnState.DONE, kind="pass", content="", data={"empty": True}
                )
            return storage.TurnCommit(
                **base, state=TurnState.DONE, kind="agent", content=reply.text
            )
        if kind_of(data) == TurnKind.PICK:
            try:
                pick = parse_pick(reply.text, data.get("eligible", []))
            except InvalidPickError as exc:
                # A pick outside the eligible set is an error, never silently replaced.
                record = error_record(exc)
                return storage.TurnCommit(
                    **{**base, "error": record},
                    state=TurnState.FAILED,
                    content=reply.text,
                    room_status=RoomStatus.FAILED,
                    stop_reason=failure_reason(turn, record),
                )
            return storage.TurnCommit(
                **base,
                state=TurnState.DONE,
                kind="agent",
                content=f"picked {pick}" if pick else "picked no one",
                data={"pick": pick},
            )
        passed = is_pass(reply.text)
        draft = call.config.moderated and not passed
        return storage.TurnCommit(
            **base,
            state=TurnState.WAITING if draft else TurnState.DONE,
            kind="pass" if passed else "agent",
            content="" if passed else reply.text,
            room_status=RoomStatus.WAITING if draft else None,
        )

    @staticmethod
    def _candidates_commit(call: Call, outcome: Reply, base: dict[str, Any]) -> storage.TurnCommit:
        """A coordinator-after turn: the chosen draft as its agent's message, every candidate
        kept with it (never shown to agents); or, for a person to pick, the turn waits."""
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
        if outcome.picked is None:  # no one: the activity settles (a pass by the coordinator)
            return storage.TurnCommit(
                **base,
                state=TurnState.DONE,
                content="",
                data={"candidates": candidates, "picked": None, "picked_by": picked_by},
            )
        return storage.TurnCommit(
            **base,
            state=TurnState.DONE,
            kind="agent",
            speaker=outcome.picked,
            content=outcome.reply.text,
            data={
                "candidates": candidates,
                "picked": outcome.picked,
                "picked_by": picked_by,
                "chosen_because": f"picked by coordinator from {len(candidates)} drafts",
            },
        )

    # -- one room ---------------------------------------------------------------------------------

    async def step(self, held: HeldRoom, *, claim_next: bool = False) -> Step:
        """One step of one room: begin (or the turn claimed with the last commit), call, finish
        (the same phases the worker batches). ``claim_next``: the caller will step again, so the
        next turn may be claimed with this one's commit."""
        started: Call | Step
        if held.pending is not None:
            started, held.pending = held.pending, None
        else:
            [started] = self.begin([held])
        if isinstance(started, Step):
            return started
        outcome = await self.call(started)
        if isinstance(outcome, Step):
            return outcome
        [step] = self.finish([(started, outcome)], claim_next=claim_next)
        return step

    async def step_room(self, room_id: int, token: int) -> Step:
        """``step`` for a caller that holds ``token`` and keeps no record of the room."""
        return await self.step(HeldRoom(room_id, token))


__all__ = [
    "BUDGET_TTL_SECONDS",
    "Call",
    "Engine",
    "FAULT_ENV",
    "FAULT_POINTS",
    "HeldRoom",
    "MAX_REFUSALS",
    "PLAN_ATTEMPTS",
    "Plan",
    "Reply",
    "Step",
    "StepKind",
    "committed_event",
    "error_record",
    "failure_reason",
    "owner_id",
    "settlement",
]
