"""Experiments for the web app: the engine's ``conversation.experiments`` plus a bridge from the
app's shipped room templates to an experiment template. No Streamlit here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conversation.experiments import *  # noqa: F403 - the whole engine API, as before
from conversation.experiments import __all__ as _engine_all


def template_from_room_template(
    template: Any, model: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """An experiment template (plain JSON) from one of the shipped room templates."""
    from ui.rooms import draft_from_template

    draft = draft_from_template(template, model=dict(model) if model else None)
    return {
        "agents": [dict(a) for a in draft.agents],
        "planner": dict(draft.planner),
        "termination": dict(draft.termination) if draft.termination else None,
        "model": dict(draft.model) if draft.model else None,
        "moderated": draft.moderated,
        "prompt_template": None,
        "context": None,
        "opening": template.opening,
    }


__all__ = [*_engine_all, "template_from_room_template"]
