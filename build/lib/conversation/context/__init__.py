"""What each agent is shown on its turn: visibility, windows, summaries, turns-left hints (pure)."""

from conversation.context.window import (
    AgentContext,
    ContextPolicy,
    SummaryRequest,
    TurnsLeft,
    build_context,
    context_policy_from_dict,
    summary_request,
    turns_left,
    visible_positions,
)

__all__ = [
    "AgentContext",
    "ContextPolicy",
    "SummaryRequest",
    "TurnsLeft",
    "build_context",
    "context_policy_from_dict",
    "summary_request",
    "turns_left",
    "visible_positions",
]
