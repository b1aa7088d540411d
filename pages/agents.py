"""Agents: the agent library (name, traits, persona instruction, model); create, edit, duplicate,
delete; import and export as JSON or an EDSL AgentList."""

from typing import Any

import pandas as pd
import streamlit as st

from conversation import browse, library
from conversation.access import Action
from conversation.exceptions import ConversationValueError
from ui.access import note
from ui.bootstrap import actor, database, page_setup
from ui.room.templates import TEMPLATES
from ui.widgets import escape_markdown, field_error, model_picker, spec_label

page_setup()

NEW = "+ New agent"
db = database()
me = actor()
edits = me.can(Action.EDIT_AGENTS)  # the engine refuses the writes below otherwise

st.title("Agents")
st.caption(
    "Your library of agents. A room copies the agents it uses, so editing one here never changes "
    "a room that already exists."
)

profiles = browse.list_agent_profiles(db)
by_name = {p.name: p for p in profiles}
notice = st.session_state.pop("agents_notice", None)
if notice:
    st.success(escape_markdown(notice))
if not edits:
    note(Action.EDIT_AGENTS)

left, right = st.columns([2, 3], gap="large")

with left:
    st.subheader(f"Library ({len(profiles)})")
    if profiles:
        st.dataframe(
            pd.DataFrame(
                {
                    "name": [p.name for p in profiles],
                    "traits": [", ".join(p.traits) for p in profiles],
                    "model": [spec_label(p.model) for p in profiles],
                    "instruction": [p.instruction[:60] for p in profiles],
                }
            ),
            hide_index=True,
            width="stretch",
        )
    else:
        st.info("No agents yet. Create one, import a file, or start a room from a template.")

    with st.expander("Agents from a template", icon=":material/library_add:"):
        tkey = st.selectbox(
            "Template", list(TEMPLATES), format_func=lambda k: TEMPLATES[k].title, key="agents-tpl"
        )
        st.caption(
            "Adds: "
            + escape_markdown(", ".join(TEMPLATES[tkey].roster))
            + " (names already used are skipped)"
        )
        if st.button("Add to the library", key="agents-from-tpl", disabled=not edits):
            added = library.add_missing(
                TEMPLATES[tkey].agents,
                by_name,
                lambda d: library.create_profile(
                    db,
                    d.name,
                    traits=dict(d.traits),
                    instruction=d.instruction,
                    model=None,
                    actor=me,
                ),
            )
            st.session_state["agents_notice"] = (
                f"Added {', '.join(added)}." if added else "Every agent of it is already here."
            )
            st.rerun()

    with st.expander("Import and export", icon=":material/swap_vert:"):
        upload = st.file_uploader(
            "Import agents (this app's JSON, or an EDSL AgentList)", type=["json"], key="import"
        )
        if upload is not None and st.button("Import", key="do-import", disabled=not edits):
            try:
                drafts = library.read_agents_file(upload.getvalue())
                clashes = [d.name for d in drafts if d.name.lower() in {n.lower() for n in by_name}]
                if clashes:
                    raise library.AgentsFileRejected(
                        f"These names are already in the library: {', '.join(clashes)}. Rename "
                        "or delete them first; nothing was imported."
                    )
                for draft in drafts:
                    library.create_profile(
                        db,
                        draft.name,
                        traits=dict(draft.traits),
                        instruction=draft.instruction,
                        model=dict(draft.model) if draft.model else None,
                        actor=me,
                    )
            except ConversationValueError as exc:
                st.error("Import rejected: " + escape_markdown(exc), icon=":material/block:")
            else:
                st.session_state["agents_notice"] = f"Imported {len(drafts)} agent(s)."
                st.rerun()
        drafts = [library.AgentDraft(p.name, p.traits, p.instruction, p.model) for p in profiles]
        st.download_button(
            "Export JSON",
            library.export_json(drafts),
            file_name="agents.json",
            mime="application/json",
            disabled=not profiles,
        )
        st.download_button(
            "Export EDSL AgentList",
            library.export_agent_list(drafts) if profiles else "",
            file_name="agent_list.json",
            mime="application/json",
            disabled=not profiles,
        )

with right:
    if "agent-choice-next" in st.session_state:
        st.session_state["agent-choice"] = st.session_state.pop("agent-choice-next")
    choice = st.selectbox("Agent", [NEW, *by_name], key="agent-choice")
    current = by_name.get(choice)
    slot = str(current.id) if current else "new"
    # Problems found by the last Save, drawn under their fields once the form is read (below):
    # a field fixed since then shows no error any more.
    flagged = st.session_state.get(f"agent-problems-{slot}", {})
    under: dict[str, Any] = {}

    st.subheader("New agent" if current is None else f"Edit {escape_markdown(current.name)}")
    name = st.text_input(
        "Name",
        value=current.name if current else "",
        key=f"agent-name-{slot}",
        help="Letters, digits, '_', '-' or '.'; others address the agent as @name.",
    )
    under["name"] = st.empty()
    instruction = st.text_area(
        "Persona instruction",
        value=current.instruction if current else "",
        key=f"agent-instruction-{slot}",
        placeholder="How this agent behaves, e.g. 'Answer in two sentences; be skeptical.'",
    )
    under["instruction"] = st.empty()
    st.markdown("**Traits** (key / value)")
    rows = [{"key": k, "value": str(v)} for k, v in (current.traits if current else {}).items()]
    edited = st.data_editor(
        pd.DataFrame(rows or [{"key": "", "value": ""}], columns=["key", "value"], dtype="string"),
        num_rows="dynamic",
        hide_index=True,
        width="stretch",
        key=f"agent-traits-{slot}",
    )
    under["traits"] = st.empty()
    model, model_problem = model_picker(
        "Model", key=f"agent-model-{slot}", current=current.model if current else None
    )
    under["model"] = st.empty()

    def _collect() -> tuple[library.AgentDraft, dict[str, str]]:
        traits, trait_problem = library.traits_from_rows(edited.to_dict("records"))
        draft = library.AgentDraft(name.strip(), traits, instruction, model)
        others = [n for n in by_name if current is None or n != current.name]
        found = library.validate(draft, others)
        if trait_problem:
            found["traits"] = trait_problem
        if model_problem:
            found["model"] = model_problem
        return draft, found

    def _values(draft: library.AgentDraft) -> dict[str, Any]:
        return {"name": draft.name, "instruction": draft.instruction,
                "traits": dict(draft.traits), "model": draft.model}  # fmt: skip

    if flagged:
        draft, found = _collect()
        then = st.session_state.get(f"agent-flagged-values-{slot}", {})
        now = _values(draft)
        for field, problem in flagged.items():
            # A changed field shows its problem now (none when fixed); an unchanged one keeps
            # the problem Save found (which may come from storage, e.g. a name taken meanwhile).
            still = found.get(field) if now.get(field) != then.get(field) else problem
            if still and field in under:
                with under[field]:
                    field_error({field: still}, field)

    save, duplicate, delete = st.columns(3)
    if save.button("Save", type="primary", key=f"save-{slot}", width="stretch", disabled=not edits):
        draft, found = _collect()
        st.session_state[f"agent-problems-{slot}"] = found
        st.session_state[f"agent-flagged-values-{slot}"] = _values(draft)
        if not found:
            try:
                if current is None:
                    library.create_profile(
                        db,
                        draft.name,
                        traits=dict(draft.traits),
                        instruction=draft.instruction,
                        model=dict(draft.model) if draft.model else None,
                        actor=me,
                    )
                else:
                    library.update_profile(
                        db,
                        int(current.id or 0),
                        name=draft.name,
                        traits=dict(draft.traits),
                        instruction=draft.instruction,
                        model=dict(draft.model) if draft.model else None,
                        actor=me,
                    )
            except ConversationValueError as exc:
                st.session_state[f"agent-problems-{slot}"] = {"name": str(exc)}
            else:
                st.session_state.pop(f"agent-problems-{slot}", None)
                if current is None:
                    for key in ("agent-name-new", "agent-instruction-new", "agent-traits-new"):
                        st.session_state.pop(key, None)
                st.session_state["agents_notice"] = f"Saved {draft.name}."
                st.session_state["agent-choice-next"] = draft.name
        st.rerun()
    if current is not None and duplicate.button(
        "Duplicate", key=f"dup-{slot}", width="stretch", disabled=not edits
    ):
        copy = library.unique_copy_name(current.name, by_name)
        library.create_profile(
            db,
            copy,
            traits=dict(current.traits),
            instruction=current.instruction,
            model=current.model,
            actor=me,
        )
        st.session_state["agents_notice"] = f"Duplicated {current.name} as {copy}."
        st.session_state["agent-choice-next"] = copy
        st.rerun()
    if current is not None:
        confirm = delete.checkbox("Confirm delete", key=f"confirm-{slot}")
        if delete.button(
            "Delete", key=f"del-{slot}", disabled=not confirm or not edits, width="stretch"
        ):
            library.delete_profile(db, int(current.id or 0), actor=me)
            st.session_state["agents_notice"] = f"Deleted {current.name}."
            st.session_state["agent-choice-next"] = NEW
            st.rerun()
