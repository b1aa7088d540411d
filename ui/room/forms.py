"""The forms that make rooms: create one (from a template or library agents, with every setting and
a prompt preview) and import one (a saved-chat message list or a room export). Streamlit widgets;
the work is done by :mod:`ui.room.rooms` and the engine."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import streamlit as st

from conversation import browse
from conversation.rooms.config import REQUEST_SETTINGS, setting_default
from ui.access import current_actor
from ui.bootstrap import human_name, once, request_id, wake_runner
from ui.widgets import escape_markdown, model_picker

from . import rooms
from .templates import TEMPLATES

FROM_TEMPLATE = "A template"
FROM_LIBRARY = "Agents from the library"


def _agents_section(db: Any, key: str, *, choose: bool = False) -> tuple[list[dict[str, Any]], Any]:
    """Pick the roster: a template's agents or library agents. Returns (agents, template).

    ``choose``: no template is preselected (an import must not get agents nobody picked).
    """
    source = st.radio(
        "Start from", [FROM_TEMPLATE, FROM_LIBRARY], horizontal=True, key=f"{key}-source"
    )
    if source == FROM_TEMPLATE:
        tkey = st.selectbox(
            "Template",
            list(TEMPLATES),
            index=None if choose else 0,
            placeholder="Choose a template",
            format_func=lambda k: TEMPLATES[k].title,
            key=f"{key}-tpl",
        )
        if tkey is None:
            return [], None
        template = TEMPLATES[tkey]
        st.caption(escape_markdown(template.description))
        return template.agent_dicts(), template
    profiles = browse.list_agent_profiles(db)
    if not profiles:
        st.info("The library is empty: add agents on the Agents page, or start from a template.")
        return [], None
    names = st.multiselect(
        "Agents (in speaking order)", [p.name for p in profiles], key=f"{key}-agents"
    )
    by_name = {p.name: p for p in profiles}
    agents = [
        {
            "name": n,
            "traits": dict(by_name[n].traits),
            "instruction": by_name[n].instruction or None,
            "model": by_name[n].model,
        }
        for n in names
    ]
    return agents, None


def _planner_section(template: Any, roster: list[str], key: str) -> dict[str, Any]:
    default = (template.planner if template else {"kind": "round_robin_room"}) or {}
    kinds = list(rooms.PLANNER_LABELS)
    kind: str = st.selectbox(
        "Turn taking",
        kinds,
        index=kinds.index(default.get("kind", "round_robin_room")),
        format_func=lambda k: rooms.PLANNER_LABELS[k],
        key=f"{key}-planner",
    )
    settings: dict[str, Any] = {}
    if kind == "round_robin_room":
        c1, c2 = st.columns(2)
        settings["max_rounds"] = c1.number_input(
            "Max rounds per activity", 1, 50, int(default.get("max_rounds", 3)), key=f"{key}-rounds"
        )
        settings["max_messages"] = c2.number_input(
            "Max messages per activity",
            1,
            500,
            int(default.get("max_messages", 20)),
            key=f"{key}-msgs",
        )
    elif kind in ("addressed", "free"):
        settings["max_messages"] = st.number_input(
            "Max messages per activity",
            1,
            500,
            int(default.get("max_messages", 20)),
            key=f"{key}-msgs",
        )
    elif kind == "focal" and roster:
        settings["focal_speaker"] = st.selectbox("Focal speaker", roster, key=f"{key}-focal")
    elif kind in ("random", "random_inclusive"):
        settings["seed"] = st.number_input("Seed", 0, 2**31 - 1, 42, key=f"{key}-seed")
    return rooms.planner_dict(kind, **settings)


def _stop_section(template: Any, key: str) -> dict[str, Any] | None:
    default = (template.termination if template else None) or {}
    parts = default.get("parts", [default]) if default else []
    max_turns = next((p["max_turns"] for p in parts if p.get("kind") == "max_turns"), 0)
    text = next((p["text"] for p in parts if p.get("kind") == "text_mention"), "")
    c1, c2 = st.columns(2)
    turns = c1.number_input(
        "Stop after this many agent turns (0: no limit)",
        0,
        1000,
        int(max_turns),
        key=f"{key}-maxturns",
    )
    word = c2.text_input("Stop when someone says", value=text, key=f"{key}-stopword")
    return rooms.termination_dict(max_turns=turns or None, stop_text=word or None)


def model_settings_fields(key: str, current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The per-room model request settings as form fields: the output limit, the request timeout,
    the context window (0: the model's own, see ``models.settings.context_window``) and the model
    cache. ``current``: a room config's values (``RoomConfig.to_dict()``) to edit; returns the
    keyword arguments ``Room.create`` takes."""
    # A new room's defaults come from the one declaration of the settings.
    now = {name: setting_default(name) for name in REQUEST_SETTINGS} | dict(current or {})
    c1, c2, c3 = st.columns(3)
    max_output = c1.number_input(
        "Max output tokens per reply",
        1,
        1_000_000,
        int(now["max_output_tokens"]),
        key=f"{key}-max-output",
    )
    timeout = c2.number_input(
        "Request timeout (seconds)",
        1.0,
        3600.0,
        float(now["request_timeout"]),
        key=f"{key}-timeout",
    )
    window = c3.number_input(
        "Context window in tokens (0: the model's own)",
        0,
        10_000_000,
        int(now.get("context_window") or 0),
        key=f"{key}-window-tokens",
        help="Known models have theirs; a server reports its own or ROOMS_CONTEXT_WINDOW applies.",
    )
    use_cache = st.checkbox(
        "Reuse cached answers (the model cache)",
        value=bool(now["use_cache"]),
        key=f"{key}-use-cache",
        help="A call answered before (same model, prompts and seed) is answered from the "
        "database at no cost; off: the model is asked every time.",
    )
    return {
        "max_output_tokens": int(max_output),
        "request_timeout": float(timeout),
        "context_window": int(window) or None,
        "use_cache": bool(use_cache),
    }


def create_room_form(db: Any, key: str = "new") -> None:
    """The whole create-room form; on success the page switches to the new room."""
    st.subheader("New room")
    agents, template = _agents_section(db, key)
    roster = [a["name"] for a in agents]
    tkey = template.key if template else "library"
    name = st.text_input(
        "Room name", value=template.title if template else "", key=f"{key}-name-{tkey}"
    )
    with st.expander("Turn taking and stopping", expanded=False, icon=":material/tune:"):
        planner = _planner_section(template, roster, f"{key}-{tkey}")
        termination = _stop_section(template, f"{key}-{tkey}")
        c1, c2 = st.columns(2)
        window = c1.number_input(
            "Show agents only the last N messages (0: all)", 0, 1000, 0, key=f"{key}-window"
        )
        moderated = c2.checkbox(
            "Moderated: a person approves each message",
            value=bool(template.moderated) if template else setting_default("moderated"),
            key=f"{key}-moderated-{tkey}",
        )
        b1, b2 = st.columns(2)
        budget = rooms.budget_dict(
            b1.number_input("Budget, US dollars (0: none)", 0.0, step=0.5, key=f"{key}-usd"),
            b2.number_input("Budget, tokens (0: none)", 0, step=10_000, key=f"{key}-tokens"),
        )
    with st.expander("Prompt and model", expanded=False, icon=":material/smart_toy:"):
        prompt = st.text_area(
            "Prompt template (empty: the default)",
            key=f"{key}-prompt",
            help="Jinja, rendered in a sandbox. Variables: speaker_name, conversation, agent_names, "
            "current_turn, max_turns, turns_left, feedback, activity_opener.",
        )
        model, model_problem = model_picker("Model for the room", key=f"{key}-model")
        model_settings = model_settings_fields(f"{key}-model-settings")
    opening = st.text_area(
        "Opening message (posted by you; it starts the room)",
        value=template.opening if template else "",
        key=f"{key}-opening-{tkey}",
    )
    draft_args: dict[str, Any] = {
        "name": name.strip(),
        "agents": agents,
        "planner": planner,
        "termination": termination,
        "model": model,
        "moderated": moderated,
        "prompt_template": prompt.strip() or None,
        "context": rooms.context_dict(window or None, None),
        "settings": model_settings,
        "budget": budget,
    }
    draft = (
        rooms.draft_from_template(template, **draft_args)
        if template
        else rooms.RoomDraft(**draft_args)
    )
    with st.expander("Preview the first agent's prompt", icon=":material/visibility:"):
        if roster:
            try:
                shown = rooms.preview_prompt(
                    draft.config(), rooms.sample_rows(opening, human_name()), roster[0]
                )
            except ValueError as exc:
                st.error(escape_markdown(exc))
            else:
                st.caption(f"System prompt of {escape_markdown(roster[0])}")
                st.code(shown.system_prompt, language=None, wrap_lines=True)
                st.caption("User prompt")
                st.code(shown.user_prompt, language=None, wrap_lines=True)
    slot = f"{key}-create"
    drawn = request_id(slot)  # made with the form: a double click creates one room
    if st.button("Create room", type="primary", key=f"{key}-create", disabled=not agents):
        problem = model_problem or (None if name.strip() else "Give the room a name.")
        if problem:
            st.error(escape_markdown(problem))
            return
        try:
            room = once(
                slot,
                lambda: rooms.create_room(
                    db,
                    draft,
                    opening=opening,
                    speaker=human_name(),
                    request_id=drawn,
                    actor=current_actor(),
                ),
            )
        except ValueError as exc:
            st.error("The room was not created: " + escape_markdown(exc))
            return
        wake_runner()
        st.query_params["room"] = str(room.id)
        st.rerun()


def import_room_form(db: Any, key: str = "import") -> None:
    """Import a saved transcript (docs/design.md, "Resuming a group chat") into a new room, or restore a room export."""
    from conversation.rooms.room import Room
    from conversation.rooms.transfer import ResumeWarning, parse_import

    st.subheader("Import a room")
    st.caption(
        "A JSON list of messages (`speaker` or `name`, and `content`) resumes a group chat with the "
        "roster you pick; a room export (from the Room page) is restored as it was."
    )
    upload = st.file_uploader("JSON file", type=["json"], key=f"{key}-file")
    pasted = st.text_area("…or paste JSON", key=f"{key}-text", height=120)
    st.markdown("**Who is in the room** (for a saved chat; an export brings its own)")
    agents, template = _agents_section(db, f"{key}-roster", choose=True)
    c1, c2 = st.columns(2)
    name = c1.text_input("Room name", value="imported room", key=f"{key}-name")
    strip = c2.text_input(
        "Remove this termination string from the last message", key=f"{key}-strip"
    )
    if st.button("Import", key=f"{key}-go"):
        data = upload.getvalue() if upload is not None else pasted
        if not data:
            st.error("Import rejected: choose a file or paste JSON first.")
            return
        options: dict[str, Any] = {}
        if template is not None:
            options = {"planner": dict(template.planner), "termination": template.termination}
        try:
            if not agents and not isinstance(parse_import(data), Mapping):
                st.error(
                    "Import rejected: a saved chat needs a roster. Choose a template or agents "
                    "from the library above; they answer from where the chat left off."
                )
                return
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ResumeWarning)
                room = Room.import_messages(
                    db,
                    data,
                    agents=agents or None,
                    remove_termination_string=strip or None,
                    name=name.strip() or "imported room",
                    actor=current_actor(),
                    **options,
                )
        except ValueError as exc:
            st.error("Import rejected: " + escape_markdown(exc))
            return
        for warning in caught:
            if issubclass(warning.category, ResumeWarning):
                st.session_state[f"_notice:{room.id}"] = str(warning.message)
        wake_runner()
        st.query_params["room"] = str(room.id)
        st.rerun()


__all__ = ["create_room_form", "import_room_form", "model_settings_fields"]
