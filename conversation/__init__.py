"""Conversation rooms: multi-agent conversations on EDSL, with people in the loop.

The public API is re-exported here; see README.md and docs/architecture.md.
"""

from .analysis import Analysis, analyze, question_from_spec
from .batch import ConversationList
from .context import (
    AgentContext,
    ContextPolicy,
    TurnsLeft,
    build_context,
    context_policy_from_dict,
    estimate_tokens,
    summary_request,
)
from .dialogue import Conversation
from .exceptions import (
    ConversationError,
    ConversationStateError,
    ConversationValueError,
    ModelCallError,
    RequestConflictError,
)
from .models import (
    ModelReply,
    OfflineModel,
    ask,
    ask_sync,
    available_providers,
    default_model,
    describe_model,
    model_spec,
    resolve_model,
)
from .room import Room, run_rooms
from .room_config import AgentSpec, RoomConfig
from .rooms import (
    AddressedPolicy,
    CoordinatorPolicy,
    FocalSpeakerPolicy,
    FreePolicy,
    InvalidPickError,
    PlannedTurn,
    RandomInclusivePolicy,
    RandomPolicy,
    RoomEvent,
    RoomTurnPlannerProtocol,
    RoundRobinPolicy,
    RoundRobinRoomPlanner,
    TransitionRules,
    extract_mentions,
    plan_turn,
    planner_from_dict,
)
from .statements import AgentStatement, AgentStatements
from .strategies import (
    FocalSpeakerStrategy,
    RandomInclusiveStrategy,
    RandomSpeakerStrategy,
    RoundRobinStrategy,
    SpeakerStrategy,
)
from .termination import (
    AllAgreed,
    ContestedEscalation,
    Convergence,
    External,
    MaxMessages,
    MaxTurns,
    RoomState,
    StopDecision,
    StoppingFunction,
    Supervisor,
    TerminationCondition,
    TextMention,
    TokenBudget,
    TokenUsage,
    termination_from_dict,
)
from .turns import Turn

__all__ = [
    "AgentSpec",
    "BackgroundWorker",
    "Room",
    "RoomConfig",
    "Turn",
    "Worker",
    "run_rooms",
    "AgentContext",
    "ContextPolicy",
    "TurnsLeft",
    "build_context",
    "context_policy_from_dict",
    "estimate_tokens",
    "summary_request",
    "AddressedPolicy",
    "CoordinatorPolicy",
    "FocalSpeakerPolicy",
    "FreePolicy",
    "InvalidPickError",
    "PlannedTurn",
    "RandomInclusivePolicy",
    "RandomPolicy",
    "RoomEvent",
    "RoomTurnPlannerProtocol",
    "RoundRobinPolicy",
    "RoundRobinRoomPlanner",
    "TransitionRules",
    "extract_mentions",
    "plan_turn",
    "planner_from_dict",
    "AllAgreed",
    "ContestedEscalation",
    "Convergence",
    "External",
    "MaxMessages",
    "MaxTurns",
    "RoomState",
    "StopDecision",
    "StoppingFunction",
    "Supervisor",
    "TerminationCondition",
    "TextMention",
    "TokenBudget",
    "TokenUsage",
    "termination_from_dict",
    "Analysis",
    "ModelReply",
    "OfflineModel",
    "analyze",
    "ask",
    "ask_sync",
    "available_providers",
    "default_model",
    "describe_model",
    "model_spec",
    "question_from_spec",
    "resolve_model",
    "AgentStatement",
    "AgentStatements",
    "Conversation",
    "ConversationError",
    "ConversationList",
    "ConversationStateError",
    "ConversationValueError",
    "FocalSpeakerStrategy",
    "ModelCallError",
    "RandomInclusiveStrategy",
    "RandomSpeakerStrategy",
    "RequestConflictError",
    "RoundRobinStrategy",
    "SpeakerStrategy",
]


def __getattr__(name: str) -> object:
    # The worker is imported on first use, so that ``python -m conversation.worker`` does not
    # find its own module already imported by the package (runpy warns about that).
    if name in ("Worker", "BackgroundWorker"):
        from . import worker

        return getattr(worker, name)
    raise AttributeError(f"module 'conversation' has no attribute {name!r}")
