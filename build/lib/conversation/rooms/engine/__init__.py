"""The one turn engine: decide, claim, call the model outside any transaction, commit with a fence
(docs/design.md, "Claimed then committed with a fence" and "One turn engine").

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

The package, by phase:

- ``records``: the phase records (``Plan``, ``Call``, ``Reply``, ``Step``, ``HeldRoom``, ...);
- ``kinds``: one handler per ``TurnKind`` (speak, summary, coordinator candidates, coordinator
  pick), in a registry keyed by the kind: how a turn of that kind is claimed, resumed, asked and
  committed. The engine dispatches on the kind and never on the planner's type;
- ``plan``: the pure plan (no storage call: what it needs is read beforehand and passed in);
- ``commit``: the pure commit mapping, reply -> ``TurnCommit``, by the turn's handler;
- ``core``: the I/O part, ``Engine`` (begin / call / finish / step).
"""

from conversation.rooms.engine.commit import commit_for
from conversation.rooms.engine.core import Engine
from conversation.rooms.engine.kinds import HANDLERS, ClaimContext, TurnHandler, handler_of
from conversation.rooms.engine.plan import Budgets, plan_room
from conversation.rooms.engine.records import (
    BUDGET_TTL_SECONDS,
    COORDINATOR_SPEAKER,
    FAULT_ENV,
    FAULT_POINTS,
    MAX_REFUSALS,
    PLAN_ATTEMPTS,
    Call,
    Drafting,
    HeldRoom,
    Plan,
    Reply,
    RoomRules,
    Step,
    StepKind,
    committed_event,
    error_record,
    failure_reason,
    owner_id,
    settlement,
)

__all__ = [
    "BUDGET_TTL_SECONDS",
    "COORDINATOR_SPEAKER",
    "Budgets",
    "Call",
    "ClaimContext",
    "Drafting",
    "Engine",
    "FAULT_ENV",
    "FAULT_POINTS",
    "HANDLERS",
    "HeldRoom",
    "MAX_REFUSALS",
    "PLAN_ATTEMPTS",
    "Plan",
    "Reply",
    "RoomRules",
    "Step",
    "StepKind",
    "TurnHandler",
    "commit_for",
    "committed_event",
    "error_record",
    "failure_reason",
    "handler_of",
    "owner_id",
    "plan_room",
    "settlement",
]
