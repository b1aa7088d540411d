"""Editing a room's settings after it was created (the Room page's Settings tab).

The form reuses the create-room form's sections (turn taking, stopping, model) with the room's
current settings as their defaults; "Apply" sends only what differs to ``Room.update_config``,
which validates it like a new room and stores a new version, applied from the next turn. The form
runs in a fragment: changing a widget reruns the form, not the page.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pandas as pd
import streamlit as st

from conversation import browse
from conversation.rooms.config import EDITABLE
from conversation.vocabulary import RoomStatus
from ui.access import note
from ui.bootstrap import human_name, wake_runner
from ui.widgets import describe_spec, escape_markdown, model_picker

from . import rooms
from .details import prompt_preview
from .forms import _planner_section, _stop_section, model_settings_fields

#: Stop rules the form can show and rebuild; a room with others keeps them (edited in code).
FORM_STOP_KINDS = frozenset({"max_turns", "text_mention"})


def _form_stops(termination: Any) -> bool:
    if not termination:
        return True
    parts = termination.get("parts", [termination]) if termination.get("kind") == "any" else []
    if termination.get("kind") in FORM_STOP_KINDS:
        parts = [termination]
    return bool(parts) and all(p.get("kind") in FORM_STOP_KINDS for p in parts)


def _roster_section(db: Any, config: Any, key: str) -> list[Any]:
    """The roster: the room's agents (kept as they are) plus any from the library."""
    current = {spec.name: spec for spec in config.roster}
    library = {p.name: p for p in browse.list_agent_profiles(db) if p.name not in current}
    names = st.multiselect(
        "Agents (in speaking order)",
        [*current, *library],
        default=list(current),
        key=f"{key}-agents",
        help="Remove an agent, or add one from the library (Agents page).",
    )
    agents: list[Any] = []
    for name in names:
        if name in current:
            agents.append(current[name])
        else:
            profile = library[name]
            agents.append(
                {
                    "name": name,
                    "traits": dict(profile.traits),
                    "instruction": profile.instruction or None,
                    "model": profile.model,
                }
            )
    return agents


def _normal(field: str, value: Any) -> Any:
    """A stored setting in its canonical form (defaults filled in), to compare like with like."""
    if field == "termination" and value:
        from conversation.termination.conditions import termination_from_dict

        return termination_from_dict(value).to_dict()
    if field == "model" and value:
        # The same model whether or not this process holds its live object, and with the
        # offline model's zero pace left out (as the picker leaves it out).
        parameters = {
            k: v
            for k, v in (value.get("parameters") or {}).items()
            if not (k == "latency" and not v) and k != "scripted"
        }
        rest = {k: v for k, v in value.items() if k not in ("instance", "parameters")}
        return {**rest, "parameters": parameters}
    return value


def settings_changes(config: Any, values: dict[str, Any]) -> dict[str, Any]:
    """Only the settings of ``values`` that differ from ``config`` (what "Apply" sends)."""
    data = config.to_dict()
    changes: dict[str, Any] = {}
    names = [a.name if hasattr(a, "name") else a["name"] for a in values["agents"]]
    if names != list(config.names):
        changes["agents"] = values["agents"]
    # Every setting the form gave (the roster, the model and breakpoints are compared apart).
    for field in (f for f in EDITABLE if f not in ("agents", "model", "breakpoints")):
        if field in values and _normal(field, values[field]) != _normal(field, data.get(field)):
            changes[field] = values[field]
    if values.get("model") is not None and _normal("model", values["model"]) != _normal(
        "model", data["model"]
    ):
        changes["model"] = values["model"]
    wanted = {k: list(v) for k, v in (values.get("breakpoints") or {}).items() if v}
    if wanted != {k: v for k, v in (data.get("breakpoints") or {}).items() if v}:
        changes["breakpoints"] = wanted or None
    return changes


@st.fragment
def settings_editor(db: Any, room_id: int, actor: Any = None) -> None:
    """The edit-settings form of room ``room_id`` (a fragment; "Apply" reruns the page).
    ``actor``: who acts (changing settings needs the researcher role, as creating a room)."""
    from conversation.access import Action
    from conversation.rooms.room import Room

    if actor is not None and not actor.can(Action.CREATE_ROOM):
        note(Action.CREATE_ROOM)  # no settings form without the role (the engine refuses too)
        return
    room = Room.open(db, room_id)
    config = room.config
    version = len(room.config_versions())
    key = f"edit-{room_id}-v{version}"  # a new version draws the form afresh from it
    st.caption(
        f"Settings version {escape_markdown(version)}. Changes apply from the next turn (a turn already being "
        "written keeps the settings it started with) and are recorded in the log."
    )
    agents = _roster_section(db, config, key)
    roster = [a.name if hasattr(a, "name") else a["name"] for a in agents]
    values: dict[str, Any] = {"agents": agents}
    defaults = SimpleNamespace(planner=dict(config.planner), termination=config.termination)
    kind = str(config.planner.get("kind"))
    if kind in rooms.PLANNER_LABELS:
        values["planner"] = _planner_section(defaults, roster, key)
    else:  # a planner the form does not offer (e.g. a coordinator): kept as it is
        st.text(f"Turn taking: {kind} (kept as it is; change it with Room.update_config)")
    if _form_stops(config.termination):
        values["termination"] = _stop_section(defaults, key)
    else:
        st.text("Stops: " + rooms.describe_termination(config.termination))
        st.caption("These stop rules are kept as they are (change them with Room.update_config).")
    c1, c2 = st.columns(2)
    context = dict(config.context or {})
    window = c1.number_input(
        "Show agents only the last N messages (0: all)",
        0,
        1000,
        int(context.get("max_messages") or 0),
        key=f"{key}-window",
    )
    if not context.get("summarize"):  # a summarising policy is kept as it is
        values["context"] = rooms.context_dict(window or None, context.get("max_tokens"))
    values["moderated"] = c2.checkbox(
        "Moderated: a person approves each message", value=config.moderated, key=f"{key}-mod"
    )
    b1, b2 = st.columns(2)
    values["breakpoints"] = {
        "before": b1.multiselect(
            "Pause before these agents speak",
            roster,
            default=[n for n in config.breakpoints_of("before") if n in roster],
            key=f"{key}-bp-before",
        ),
        "after": b2.multiselect(
            "Pause after each turn of",
            roster,
            default=[n for n in config.breakpoints_of("after") if n in roster],
            key=f"{key}-bp-after",
        ),
    }
    prompt = st.text_area(
        "Prompt template (empty: the default)",
        value=config.prompt_template or "",
        key=f"{key}-prompt",
    )
    values["prompt_template"] = prompt.strip() or None
    model, problem = model_picker("Model for the room", key=f"{key}-model", current=config.model)
    values["model"] = model
    values.update(model_settings_fields(f"{key}-request", config.to_dict()))
    changes = settings_changes(config, values)
    if st.button("Apply settings", key=f"{key}-apply", type="primary", disabled=not changes):
        if problem:
            st.error(escape_markdown(problem))
            return
        try:
            room.update_config(changes, actor=actor, by=human_name())
        except ValueError as exc:
            st.error("Not applied: " + escape_markdown(exc))
            return
        st.session_state[f"_notice:{room_id}"] = "Settings applied: " + ", ".join(sorted(changes))
        wake_runner()
        st.rerun()
    with st.expander("Earlier versions"):
        st.dataframe(
            [
                {
                    "version": v["version"],
                    "by": v["by"] or "",
                    "changed": ", ".join(v["changes"]) or "(created)",
                    "from message": v["from_seq"],
                }
                for v in room.config_versions()
            ],
            hide_index=True,
            width="stretch",
        )


def settings_panel(db: Any, room_id: int, config: Any, actor: Any = None) -> None:
    """The Settings tab: the roster, the room's other settings, the next prompt's preview and the
    form that edits them (names, traits and instructions drawn as table cells, never markup)."""
    roster = [
        {
            "agent": spec.name,
            "traits": ", ".join(f"{k}: {v}" for k, v in spec.traits.items()),
            "instruction": spec.instruction or "",
            "model": describe_spec(spec.model) if spec.model else "room's model",
        }
        for spec in config.roster
    ]
    st.dataframe(pd.DataFrame(roster), hide_index=True, width="stretch")
    # Every setting as stored (the roster is the table above).
    st.json(
        {k: v for k, v in config.to_dict().items() if k not in ("version", "roster")},
        expanded=False,
    )
    prompt_preview(db, room_id)
    with st.expander("Edit settings", icon=":material/edit:"):
        settings_editor(db, room_id, actor)


def breakpoint_notice(record: Any) -> None:
    """Say so when a breakpoint holds the room (plain text: it names an agent)."""
    reason = record.stop_reason or ""
    if record.status == RoomStatus.PAUSED and reason.endswith("(breakpoint)"):
        st.text(f"⏸ {reason}. Press Resume to let this turn go on.")


__all__ = ["breakpoint_notice", "settings_changes", "settings_editor", "settings_panel"]
