"""Experiments for the web app: the engine's ``conversation.experiments`` plus a bridge from the
app's shipped room templates to an experiment template. No Streamlit here."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from conversation.experiments import *  # noqa: F403 - the whole engine API, as before
from conversation.experiments import Progress
from conversation.experiments import __all__ as _engine_all
from conversation.termination.budget import Budget


def experiment_labels(db: Any, *, show_archived: bool, linked: int | None = None) -> dict[int, str]:
    """The experiment pickers' entries (Experiments, Results), ``{id: "#id name"}`` newest
    first: archived experiments only when asked for, marked "(archived)"; an archived one a link
    names (``?experiment=``) is listed anyway, first, so it stays reachable. A linked id that
    does not exist is left out (the page says so)."""
    from conversation import browse

    listed = browse.list_experiments(db, archived=None if show_archived else False, limit=None)
    if linked is not None and all(e.id != linked for e in listed):
        with contextlib.suppress(LookupError):
            listed = [browse.get_experiment(db, linked), *listed]
    return {
        int(e.id or 0): f"#{e.id} {e.name}" + (" (archived)" if e.archived_at else "")
        for e in listed
    }


def template_from_room_template(
    template: Any, model: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """An experiment template (plain JSON) from one of the shipped room templates."""
    from ui.room.rooms import draft_from_template

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


def budget_from_inputs(dollars: float | None, tokens: int | None) -> Budget | None:
    """The experiment budget typed on the design form (0 or empty: no limit of that kind)."""
    budget = Budget(max_tokens=int(tokens) if tokens else None, max_dollars=dollars or None)
    return budget if budget.limited else None


def spend_line(progress: Progress) -> str:
    """What the experiment's rooms spent, against its budget if it has one."""
    spent = progress.spent
    if progress.budget is None:
        return f"Spent: {spent.tokens:,} tokens, {spent.cost_text}; no budget"
    reached = progress.budget.reached(spent) is not None
    return f"Spent: {progress.budget.describe(spent)} budget" + (
        " (reached: no new turns start)" if reached else ""
    )


__all__ = [*_engine_all, "budget_from_inputs", "spend_line", "template_from_room_template"]
