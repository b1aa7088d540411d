"""Home: what this is, which model answers, the rooms at a glance, and rooms from templates."""

import streamlit as st

from conversation.access import Action
from storage import repository as repo
from ui import rooms
from ui.access import note
from ui.bootstrap import (
    actor,
    database,
    human_name,
    model_summary,
    once,
    page_setup,
    request_id,
    wake_runner,
)
from ui.templates import TEMPLATES
from ui.widgets import escape_markdown

page_setup()
db = database()
OVERVIEW_REFRESH_SECONDS = 3

st.title("Conversation rooms")
st.markdown(
    "A lab for conversations between LLM agents, with people in the loop. Design agents, put them "
    "in a room, watch their turns arrive live, step in with a message, moderate, run many rooms "
    "as an experiment and chart the results. Everything is saved, so rooms survive restarts."
)

label, offline, providers = model_summary()
if offline:
    st.warning(
        f"**Active model: {escape_markdown(label)}.** It is a deterministic stand-in so the app works without an "
        "API key; it is not an LLM. Set a provider key (e.g. `OPENAI_API_KEY`) in the environment "
        "or `.streamlit/secrets.toml` and restart to use a real model.",
        icon=":material/smart_toy:",
    )
else:
    st.success(f"**Active model: {escape_markdown(label)}**", icon=":material/smart_toy:")

st.subheader("Start a room from a template")
me = actor()
creates = me.can(Action.CREATE_ROOM)
if not creates:
    note(Action.CREATE_ROOM)
columns = st.columns(len(TEMPLATES))
for column, template in zip(columns, TEMPLATES.values(), strict=True):
    with column.container(border=True):
        st.markdown(f"**{escape_markdown(template.title)}**")
        st.caption(escape_markdown(template.description))
        st.caption("Agents: " + escape_markdown(", ".join(template.roster)))
        request_id(f"start-{template.key}")  # drawn with the button: a double click is one room
        if st.button("Start", key=f"start-{template.key}", type="primary", disabled=not creates):
            room = once(
                f"start-{template.key}",
                lambda t=template: rooms.create_room(
                    db,
                    rooms.draft_from_template(t),
                    opening=t.opening,
                    speaker=human_name(),
                    actor=me,
                ),
            )
            wake_runner()
            st.switch_page("pages/room.py", query_params={"room": str(room.id)})
st.page_link("pages/room.py", label="Or design a room yourself", icon=":material/add:")


def rooms_overview() -> None:
    table = rooms.overview(db)
    if table.empty:
        st.info("No rooms yet: start one above.")
        return
    picked = st.dataframe(
        table,
        hide_index=True,
        on_select="rerun",
        selection_mode="single-row",
        key="home-rooms",
        width="stretch",
        column_config={
            "room_id": st.column_config.NumberColumn("room", format="#%d"),
            "cost": st.column_config.NumberColumn("cost so far", format="$%.4f"),
            "last_message": st.column_config.TextColumn("last message", width="large"),
        },
    )
    if picked.selection.rows:
        chosen = int(table.iloc[picked.selection.rows[0]]["room_id"])
        st.switch_page("pages/room.py", query_params={"room": str(chosen)})
    st.caption("Select a row to open the room.")


st.subheader(f"Rooms ({repo.count_rooms(db):,})")
busy = repo.count_rooms(db, status="running") > 0
if busy:
    st.fragment(rooms_overview, run_every=OVERVIEW_REFRESH_SECONDS)()
else:
    rooms_overview()
