"""The engine's phase records (what a plan, a claimed call, a reply and a step are) and the pure
helpers every phase shares (a failed turn's record and reason, a room's settlement).

No I/O here: the records are values the phases hand to each other."""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import storage
from conversation import models
from conversation.context.window import ContextPolicy
from conversation.models.bindings import ModelCache
from conversation.models.retries import http_status
from conversation.models.settings import CallSettings, window_is_fixed
from conversation.rooms.config import RoomConfig
from conversation.rooms.log import RoomLog
from conversation.rooms.prompt import SpeakerFrame, TurnPrompt
from conversation.termination.state import RoomState
from conversation.vocabulary import NoticeKind, RoomStatus
from settings import SETTINGS, env_name

#: Environment variable naming a point of a turn at which the process kills itself (crash tests).
FAULT_ENV = env_name("fault_point")
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


def fault(point: str) -> None:
    """Kill this process at ``point`` when the crash tests ask for it (``FAULT_ENV``)."""
    if SETTINGS.fault_point == point:  # a test hook: never set outside the crash tests
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
class Drafting:
    """A coordinator-after turn: every eligible agent's draft prompt, and who picks among the
    drafts (a roster agent, asked with the ``view`` it reads; None: a person picks)."""

    prompts: tuple[tuple[str, TurnPrompt], ...]
    coordinator: str | None
    view: RoomState


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
    #: claim: the call settings the prompt was fitted to, carried to the call (None: the call
    #: reads its speaker's from the config)
    settings: Any = None
    again: bool = False  # wait: planning again at once may take a turn
    drafting: Drafting | None = None  # claim / resume of a coordinator-after turn
    notice_data: dict[str, Any] | None = None  # settle: the data of its notice (a breakpoint)


@dataclass(frozen=True, slots=True)
class Step:
    """What one step did: the tag, the room's status after it, why, and the committed turn."""

    kind: StepKind
    status: str
    reason: str | None = None
    turn: storage.Event | None = None
    again: bool = False  # nothing was done, but stepping again at once may take a turn


@dataclass(frozen=True, slots=True)
class RoomRules:
    """A stored config validated, with what it builds (all immutable): the planner, the stop
    rule, the roster's names and, made on first use, each speaker's model and prompt frame. A
    worker plans every turn from these, so a turn reads no setting of the config twice."""

    source: Mapping[str, Any]
    config: RoomConfig
    planner: Any
    condition: Any
    names: tuple[str, ...]
    policy: ContextPolicy  # the config's context policy
    resolved: dict[str, Any] = dataclasses.field(default_factory=dict)  # speaker -> model
    frames: dict[str, SpeakerFrame] = dataclasses.field(default_factory=dict)
    settings: dict[str, CallSettings] = dataclasses.field(default_factory=dict)

    def model_for(self, speaker: str, models: ModelCache) -> Any:
        """The model that answers for ``speaker`` (resolved once per config)."""
        model = self.resolved.get(speaker)
        if model is None:
            model = self.resolved[speaker] = models.get(self.config.model_of(speaker))
        return model

    def frame(self, speaker: str) -> SpeakerFrame:
        """What every prompt of ``speaker`` shares (``prompt.SpeakerFrame``), made once."""
        frame = self.frames.get(speaker)
        if frame is None:
            frame = self.frames[speaker] = SpeakerFrame.of(self.config, speaker)
        return frame

    def call_settings(self, speaker: str) -> CallSettings:
        """``speaker``'s call settings: kept once made when they cannot change while the room
        runs (``window_is_fixed``), else read from the config at each turn."""
        settings = self.settings.get(speaker)
        if settings is None:
            config = self.config
            settings = config.call_settings(speaker)
            if window_is_fixed(config.model_of(speaker), config.context_window):
                self.settings[speaker] = settings
        return settings

    @classmethod
    def of(cls, source: Mapping[str, Any]) -> RoomRules:
        config = RoomConfig.from_dict(source)
        return cls(
            source,  # a row snapshot's document: read, never changed (storage's contract)
            config,
            config.planner_object(),
            config.termination_object(),
            config.names,
            config.context_policy(),
        )


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
    #: The room's ``edits`` read with ``log``: the changes people made to existing events. A
    #: newer count means a row of ``log`` changed (a decision, a stop): the log is read whole
    #: again, and a write planned from the old one is refused by the fence.
    edits: int | None = None

    def rules_of(self, room: storage.Room) -> RoomRules:
        """The room's rules, built again only when its stored config changed (a worker reads
        the same config on every turn; validating it and building its planner each time would
        cost more than the rest of the turn)."""
        rules = self.rules
        if rules is None or (rules.source is not room.config and rules.source != room.config):
            rules = self.rules = RoomRules.of(room.config)
        return rules

    def forget_log(self) -> None:
        """Read the log whole next time (after a refusal or a lost lease it may be stale)."""
        self.log = None
        self.pending = None
        self.edits = None

    @property
    def seen_seq(self) -> int | None:
        """The last seq of the log the room's plan was made from (None: no log was read)."""
        return self.log.last_seq if self.log is not None else None


@dataclass(frozen=True, slots=True)
class Call:
    """A turn ready to be asked of its model: claimed (or found running), its prompt, and what
    the call needs, resolved once when the turn was claimed: the model that answers, its
    per-request settings, the cache and the cache iteration."""

    held: HeldRoom
    kind: StepKind
    config: RoomConfig
    turn: storage.Event
    prompt: TurnPrompt
    drafting: Drafting | None = None
    model: Any = None
    settings: Any = None
    cache: Any = None
    iteration: int = 0
    #: The database, for a call that writes its partial draft as it streams.
    db: storage.Database | None = None
    #: The ``TurnHandler`` of the turn's kind (``kinds.handler_of``), looked up once when the
    #: call is made: it asks the model and maps the reply to its commit.
    handler: Any = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A model reply for a turn, and the attempts it took; for a coordinator-after turn, every
    drafted candidate, who was picked, and whether the pick is made (or waits for a person)."""

    reply: models.ModelReply
    attempts: int
    candidates: tuple[dict[str, Any], ...] = ()
    picked: str | None = None
    decided: bool = True
    #: Why the reply is what it is when the engine decided it (a pass after echo-only tries).
    note: str | None = None
    #: Who stopped the reply while it streamed (``reply.text``: the draft so far); None: complete.
    stopped_by: str | None = None


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
    expected_edits: int | None = None,
) -> storage.RoomSettlement:
    """The storage settlement of a room (a terminated or failed room gets its reason as a system
    event too, kept with the event that ended it; so does a room a breakpoint pauses).

    ``expected_last_seq``: the last seq of the log the plan read; the write is refused if the
    log grew meanwhile (a person's message must be planned for, not settled over);
    ``expected_edits``: the room's ``edits`` read with it (refused if an event of it changed)."""
    notice = data = None
    if status == RoomStatus.PAUSED and reason:
        notice, data = reason, notice_data
    elif status == RoomStatus.TERMINATED:
        # "ended", as every page words the status; "Stopped:" is a person's stop (Room.stop)
        notice = f"Ended: {reason}"
        data = {"event": NoticeKind.TERMINATED, "reason": reason}
    elif status == RoomStatus.FAILED and reason:
        notice = f"Failed: {reason}"
        data = {"event": NoticeKind.FAILED, "reason": reason}
    return storage.RoomSettlement(
        room_id=room_id,
        token=token,
        status=status,
        expected_last_seq=expected_last_seq,
        expected_edits=expected_edits,
        stop_reason=reason,
        notice=notice,
        notice_data=data,
    )


def settlement_of(held: HeldRoom, plan: Plan) -> storage.RoomSettlement:
    """The settlement a ``settle`` / ``fail`` plan of ``held`` writes, fenced by its lease and by
    the log its plan read."""
    return settlement(
        held.room_id,
        held.token,
        str(plan.status),
        plan.reason,
        plan.notice_data,
        expected_last_seq=held.seen_seq,
        expected_edits=held.edits,
    )


def owner_id(role: str = "room") -> str:
    """A lease owner name unique to this process and object."""
    import socket
    import uuid

    return f"{role}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
