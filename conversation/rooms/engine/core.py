"""The engine's I/O part: reads a room's log, plans (the pure ``plan_room``), claims, calls the
model outside any transaction, and commits with a fence (see the package docstring)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import storage
from conversation import models
from conversation.models.bindings import ModelCache
from conversation.models.chat_shape import checks_copies
from conversation.models.stored_cache import StoredCache
from conversation.rooms.config import RoomConfig
from conversation.rooms.engine.asking import ask_with_retries, fail_turn
from conversation.rooms.engine.budgets import ExperimentBudgets
from conversation.rooms.engine.commit import commit_for
from conversation.rooms.engine.kinds import handler_of
from conversation.rooms.engine.plan import plan_room
from conversation.rooms.engine.records import (
    MAX_REFUSALS,
    PLAN_ATTEMPTS,
    Call,
    HeldRoom,
    Plan,
    Reply,
    RoomRules,
    Step,
    StepKind,
    committed_event,
    fault,
    settlement_of,
)
from conversation.rooms.log import RoomLog
from conversation.text.copies import RepeatGuard
from conversation.vocabulary import RoomStatus, TurnKind

log = logging.getLogger(__name__)

#: A step's result while a batch is being begun (None: not decided yet).
Results = list[Call | Step | None]


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
        self._experiments = ExperimentBudgets(db)

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

    commit_for = staticmethod(commit_for)

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

    def _plan(self, room: storage.Room, held: HeldRoom) -> Plan:
        if room.status != RoomStatus.RUNNING:
            return Plan(StepKind.WAIT, status=RoomStatus(room.status), reason=room.stop_reason)
        rules = held.rules_of(room)
        budgets = self._experiments.budgets_of(room, held, rules.config)
        return plan_room(room, held, rules, budgets, self._labels(rules))

    def _labels(self, rules: RoomRules) -> Callable[[str | None], str]:
        """The label of the model answering for a speaker (None: the room's own model)."""

        def label(speaker: str | None) -> str:
            if speaker is None:
                return models.model_label(self.models.get(rules.config.model))
            return models.model_label(rules.model_for(speaker, self.models))

        return label

    def _with_log(self, room: storage.Room, held: HeldRoom, new_rows: list[storage.Event]) -> Plan:
        """Bring ``held.log`` up to date with the rows just read, then plan."""
        try:
            names = held.rules_of(room).names
        except Exception:  # noqa: BLE001 - a broken config is the plan's failure to report
            names = ()
        if held.log is None:
            held.log = RoomLog(names, new_rows)
        elif held.log.roster != names:  # the roster changed: the view is built again
            held.log = RoomLog(names, [*held.log.rows, *new_rows])
        else:
            held.log.extend(new_rows)
        return self.plan(room, held)

    def _call_of(self, held: HeldRoom, kind: StepKind, plan: Plan, turn: storage.Event) -> Call:
        """The call of a claimed (or resumed) turn, with what it needs resolved once: the model
        answering for its speaker, its request settings, the cache and the cache iteration."""
        config, speaker = plan.config, turn.speaker
        assert config is not None and plan.prompt is not None
        rules = held.rules
        if rules is not None and rules.config is config:
            model = rules.model_for(speaker, self.models)
        else:
            model = self.models.get(config.model_of(speaker))
        settings = plan.settings or config.call_settings(speaker)
        handler = handler_of(turn)
        if held.log is not None and handler.kind is TurnKind.SPEAK and checks_copies(model):
            # what the reply must not copy: the messages before it, its denied drafts
            drafts = tuple(d.get("draft") or "" for d in (turn.data or {}).get("denials", ()))
            guard = RepeatGuard(held.log.copies, turn.seq, drafts)
            settings = dataclasses.replace(settings, repeats=guard)
        return Call(
            held,
            kind,
            config,
            turn,
            plan.prompt,
            plan.drafting,
            model=model,
            settings=settings,
            cache=self.cache_for(config),
            iteration=config.cache_iteration,
            db=self.db,
            handler=handler,
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
        logs = self._read_logs(held_rooms)
        results: Results = [None] * len(held_rooms)
        settling: list[tuple[int, Plan]] = []
        claiming: list[tuple[int, Plan]] = []
        for index, held in enumerate(held_rooms):
            found = logs.get(held.room_id)
            if found is None:
                results[index] = Step(StepKind.WAIT, "deleted", "the room no longer exists")
                continue
            held.room, new_rows = found
            held.edits = held.room.edits
            plan = self._with_log(held.room, held, new_rows)
            if plan.kind in (StepKind.SETTLE, StepKind.FAIL) and plan.write:
                settling.append((index, plan))
            elif plan.kind == StepKind.CLAIM and claim:
                claiming.append((index, plan))
            else:
                results[index] = self._begun(held, plan)
        self._settle(held_rooms, settling, results)
        self._claim(held_rooms, claiming, results)
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    def _read_logs(
        self, held_rooms: Sequence[HeldRoom]
    ) -> dict[int, tuple[storage.Room, list[storage.Event]]]:
        """The held rooms' new log rows (one read); a room whose kept log missed a change to one
        of its rows (a person decided a draft, stopped a turn: its ``edits`` moved) is read whole
        again, since new rows alone would leave the changed row as it was."""
        logs = storage.room_logs(
            self.db,
            [h.room_id for h in held_rooms],
            after_seq={h.room_id: h.log.last_seq for h in held_rooms if h.log is not None},
        )
        stale = [
            h
            for h in held_rooms
            if h.log is not None and h.room_id in logs and logs[h.room_id][0].edits != h.edits
        ]
        for held in stale:
            held.forget_log()
        if stale:
            logs.update(storage.room_logs(self.db, [h.room_id for h in stale]))
        return logs

    def _begun(self, held: HeldRoom, plan: Plan) -> Call | Step:
        """A plan that writes nothing now: a resumed turn's call, or a step that waits."""
        if plan.kind == StepKind.RESUME:
            assert plan.turn is not None
            if storage.lease_is_current(self.db, held.room_id, held.token):
                # Only a current lease holder may spend money on an open turn (it may be
                # another worker's, claimed after this one's lease ran out).
                return self._call_of(held, plan.kind, plan, plan.turn)
            held.forget_log()
            return Step(StepKind.WAIT, RoomStatus.RUNNING, "lease lost")
        if plan.kind == StepKind.CLAIM:
            return Step(StepKind.WAIT, RoomStatus.RUNNING, "a turn is due")
        if plan.kind == StepKind.WAIT:
            return Step(StepKind.WAIT, str(plan.status), plan.reason, again=plan.again)
        return Step(plan.kind, str(plan.status), plan.reason)  # already in its status

    def _settle(
        self, held_rooms: Sequence[HeldRoom], settling: Sequence[tuple[int, Plan]], results: Results
    ) -> None:
        if not settling:
            return
        applied = storage.settle_rooms(
            self.db, [settlement_of(held_rooms[i], p) for i, p in settling]
        )
        for (index, plan), ok in zip(settling, applied, strict=True):
            held = held_rooms[index]
            if ok:
                held.refusals = 0
                results[index] = Step(plan.kind, str(plan.status), plan.reason)
            else:
                # The room moved meanwhile (a person posted or acted) or the lease is gone: plan
                # again at once from a fresh read, a few times, as for a refused claim.
                results[index] = refused(held, "settlement refused")

    def _claim(
        self, held_rooms: Sequence[HeldRoom], claiming: Sequence[tuple[int, Plan]], results: Results
    ) -> None:
        if not claiming:
            return
        claimed = storage.claim_turns(self.db, [p.claim for _, p in claiming])  # type: ignore[misc]
        for (index, plan), turn in zip(claiming, claimed, strict=True):
            held = held_rooms[index]
            if turn is None:
                # The log moved (plan again at once, a few times) or the lease is gone.
                results[index] = refused(held, "claim refused")
                continue
            held.refusals = 0
            assert held.log is not None
            held.log.extend([turn])
            fault("after_claim")
            results[index] = self._call_of(held, StepKind.CLAIM, plan, turn)

    # -- 3. call ----------------------------------------------------------------------------------

    async def call(self, call: Call, *, renew: bool = True) -> Reply | Step:
        """Ask the model for the turn (by the handler of its kind), retrying transient failures.

        Every failed try is persisted first (attempts, next attempt time). A turn that cannot
        succeed is written as interrupted/failed here, with the room failed in the same write
        (a ``fail`` step). With ``renew``, the lease is renewed while the call runs (a worker
        renews its leases itself)."""
        turn = call.turn
        if not call.prompt.user_prompt:  # a resumed summary with nothing left to summarise
            label = models.model_label(call.model)
            nothing = models.ModelReply("", label, 0, 0, 0.0, False, None, 0.0, None)
            return Reply(nothing, turn.attempts)
        if turn.next_attempt_at is not None:
            wait = (turn.next_attempt_at - self._now()).total_seconds()
            if wait > 0:
                await asyncio.sleep(min(wait, 60.0))
        renewer = asyncio.ensure_future(self._keep_lease(call.held)) if renew else None
        try:
            outcome = await ask_with_retries(self.db, self.models, call, self._now)
        finally:
            if renewer is not None:
                renewer.cancel()
        if isinstance(outcome, Reply):
            fault("after_answer")
        return outcome

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
        fault("before_commit")
        commits = [commit_for(call, reply) for call, reply in replies]
        events = [
            committed_event(call.turn, commit)
            for (call, _), commit in zip(replies, commits, strict=True)
        ]
        follow = [
            (index, plan)
            for index, ((call, _), commit, event) in enumerate(
                zip(replies, commits, events, strict=True)
            )
            if (plan := self._follow_up(call.held, commit, event, claim_next)) is not None
        ]
        claims = [(i, p) for i, p in follow if p.kind == StepKind.CLAIM]
        settles = [(i, p) for i, p in follow if p.kind != StepKind.CLAIM]
        applied, settled, claimed = storage.apply_turns(
            self.db,
            commits=commits,
            settlements=[settlement_of(replies[i][0].held, p) for i, p in settles],
            claims=[p.claim for _, p in claims],  # type: ignore[misc]
        )
        after: dict[int, tuple[Plan, bool | storage.Event | None]] = {
            **{i: (p, ok) for (i, p), ok in zip(settles, settled, strict=True)},
            **{i: (p, turn) for (i, p), turn in zip(claims, claimed, strict=True)},
        }
        return [
            self._finished(call, commit, event, ok, after.get(index))
            for index, ((call, _), commit, event, ok) in enumerate(
                zip(replies, commits, events, applied, strict=True)
            )
        ]

    def _follow_up(
        self, held: HeldRoom, commit: storage.TurnCommit, event: storage.Event, claim_next: bool
    ) -> Plan | None:
        """The room's next plan, from its log as ``commit`` leaves it, when it is written with
        the commit: a claim (with ``claim_next``) or a settlement; else None."""
        if held.log is None or not held.log.rows or held.log.rows[-1].id != event.id:
            held.forget_log()
            return None
        held.log.replace_last(event)  # undone (forgotten) if the commit is refused
        if commit.room_status is not None or held.room is None:
            return None
        upcoming = self.plan(held.room, held)
        wanted = (StepKind.SETTLE, StepKind.FAIL, StepKind.CLAIM)[: 3 if claim_next else 2]
        # A breakpoint's pause is not written with this commit: the settings may have changed
        # while the turn ran (a claim would be refused by its expected seq; a settlement is
        # not), so the next step decides it from a fresh read.
        breakpoint = upcoming.status == RoomStatus.PAUSED
        if upcoming.kind in wanted and upcoming.write and not breakpoint:
            return upcoming
        return None

    def _finished(
        self,
        call: Call,
        commit: storage.TurnCommit,
        event: storage.Event,
        ok: bool,
        followed: tuple[Plan, bool | storage.Event | None] | None,
    ) -> Step:
        """The step of one committed reply, and what its follow-up left for the next step."""
        held = call.held
        if not ok:  # fenced out: stopped by a person, or the lease was lost
            held.forget_log()
            return Step(StepKind.WAIT, RoomStatus.RUNNING, "commit refused by the fence")
        status: str = commit.room_status or RoomStatus.RUNNING
        reason = commit.stop_reason
        plan, outcome = followed if followed is not None else (None, None)
        if plan is not None and plan.kind == StepKind.CLAIM:
            if isinstance(outcome, storage.Event) and held.log is not None:
                held.log.extend([outcome])
                held.pending = self._call_of(held, StepKind.CLAIM, plan, outcome)
                fault("after_claim")
            else:  # refused (the log moved): plan again from a fresh read
                held.forget_log()
        elif plan is not None and outcome:
            status, reason = str(plan.status), plan.reason
            held.forget_log()  # its notice was appended: read it with the log next time
        kind = StepKind.FAIL if status == RoomStatus.FAILED else call.kind
        return Step(kind, status, reason, turn=event)

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


def refused(held: HeldRoom, reason: str) -> Step:
    """A refused settlement or claim: read the log whole and plan again at once, a few times."""
    held.refusals += 1
    held.forget_log()
    return Step(StepKind.WAIT, RoomStatus.RUNNING, reason, again=held.refusals <= MAX_REFUSALS)


__all__ = ["Engine", "fail_turn", "refused"]
