"""The pure plan: what a room needs now, from its row, its log and its rules (no storage call).

What a plan needs from outside (an experiment's budget and what its other rooms spent, the label
of the model answering for a speaker) is read by the engine's I/O part beforehand and passed in,
so the same inputs always give the same plan."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import storage
from conversation.planning.planner import plan_turn
from conversation.rooms.breakpoints import breakpoint_pause, released
from conversation.rooms.config import RoomConfig
from conversation.rooms.engine.kinds import ClaimContext, claim_new, handler_of
from conversation.rooms.engine.records import HeldRoom, Plan, RoomRules, StepKind
from conversation.rooms.log import RoomLog, turn_request_id
from conversation.termination.budget import Budget, Spend
from conversation.termination.state import RoomState
from conversation.vocabulary import RoomStatus, TurnState


@dataclass(frozen=True, slots=True)
class Budgets:
    """An experiment's budget and what its other rooms spent, as read for this plan (no
    experiment budget: ``experiment`` is None)."""

    experiment: Budget | None = None
    others: Spend = field(default_factory=lambda: Spend(0, 0.0))


def plan_room(
    room: storage.Room,
    held: HeldRoom,
    rules: RoomRules,
    budgets: Budgets,
    label: Callable[[str | None], str],
) -> Plan:
    """What the room needs now (see ``Plan``), from ``room``, ``held.log`` and ``rules``."""
    if room.status != RoomStatus.RUNNING:
        return Plan(StepKind.WAIT, status=RoomStatus(room.status), reason=room.stop_reason)
    room_log = held.log
    assert room_log is not None
    if room_log.open_turn is not None:
        return _open_turn(room, room_log, rules)
    view = room_log.view()
    stop = _stop(rules, room_log, view, budgets)
    if stop is not None:
        return stop
    config = rules.config
    planned = plan_turn(rules.planner, rules.names, view.events)
    if planned is None:
        return Plan(StepKind.SETTLE, status=RoomStatus.SETTLED)
    # Breakpoints, like moderation, are a rule of the room's config read at each turn: the
    # room pauses here, before any claim or model call (see rooms/breakpoints.py).
    rows, entries = room_log.rows, room_log.entries  # each row parsed once, as it arrived
    pause = breakpoint_pause(config, entries, planned.speaker)
    if pause is not None:
        return Plan(
            StepKind.SETTLE, status=RoomStatus.PAUSED, reason=pause.reason, notice_data=pause.data
        )
    because = planned.reason or "chosen by the planner"
    releaser = released(entries, planned.speaker)
    if releaser is not None:
        because = f"{because}; breakpoint released by {releaser}"
    last = rows[-1] if rows else None
    return claim_new(
        ClaimContext(
            rules=rules,
            view=view,
            planned=planned,
            because=because,
            round=last.round if last is not None else 0,
            common=_claim_fields(held, view, last),
            label=label,
        )
    )


def _open_turn(room: storage.Room, room_log: RoomLog, rules: RoomRules) -> Plan:
    """The room's open turn: a draft waits for a person, an interrupted turn fails the room, a
    running one is resumed by the handler of its kind."""
    turn = room_log.open_turn
    assert turn is not None
    if turn.state == TurnState.WAITING:
        return Plan(StepKind.SETTLE, status=RoomStatus.WAITING)
    if turn.state == TurnState.INTERRUPTED:
        return Plan(StepKind.FAIL, status=RoomStatus.FAILED, reason=room.stop_reason)
    before = room_log.view(before_seq=turn.seq)
    return handler_of(turn).resume(rules.config, before, turn, rules.planner)


def _stop(rules: RoomRules, room_log: RoomLog, view: RoomState, budgets: Budgets) -> Plan | None:
    """The room's ``terminated`` settlement when a budget is spent or its condition fired."""
    over = over_budget(rules.config, room_log.spent(), budgets)
    if over is not None:
        return Plan(StepKind.SETTLE, status=RoomStatus.TERMINATED, reason=over)
    if rules.condition is not None:
        decision = rules.condition.evaluate(view)
        if decision is not None:
            return Plan(StepKind.SETTLE, status=RoomStatus.TERMINATED, reason=decision.reason)
    return None


def over_budget(config: RoomConfig, spent: Spend, budgets: Budgets) -> str | None:
    """Why no new turn may start (the room's or its experiment's budget is spent), or None.
    ``spent``: the room's own spend (from its log, current)."""
    if config.budget is not None:
        reason = config.budget.reached(spent)
        if reason is not None:
            return reason
    if budgets.experiment is None:
        return None
    return budgets.experiment.reached(spent + budgets.others, scope="experiment budget")


def _claim_fields(held: HeldRoom, view: RoomState, last: Any) -> dict[str, Any]:
    """The claim fields every kind shares: the fence (lease token, the log's last seq and the
    room's edits read with it), the
    turn's deterministic request id, and where it hangs in the log."""
    return {
        "room_id": held.room_id,
        "token": held.token,
        "expected_last_seq": view.last_seq,
        "expected_edits": held.edits,
        "request_id": turn_request_id(view.last_seq + 1),
        "activity": last.activity if last is not None else 0,
        "parent_event_id": last.id if last is not None else None,
    }


__all__ = ["Budgets", "over_budget", "plan_room"]
