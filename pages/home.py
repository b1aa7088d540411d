"""Home: what this is, which model answers, the rooms at a glance, and rooms from templates."""

import streamlit as st

from conversation import browse
from conversation.access import Action
from conversation.rooms.status_words import status_word
from conversation.vocabulary import ROOM_STATUSES as STATUSES
from ui import manage
from ui.access import note
from ui.bootstrap import (
    actor,
    database,
    human_name,
    model_choice,
    model_summary,
    once,
    page_setup,
    request_id,
    wake_runner,
)
from ui.room import rooms
from ui.room.templates import TEMPLATES
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

label, offline, _ = model_summary()
choice = model_choice()
why = choice.reason + (" " + choice.missing if choice.missing else "")
if offline:
    st.warning(
        f"**Active model: {escape_markdown(label)}.** It is a deterministic stand-in so the app "
        f"works without an API key; it is not an LLM. {escape_markdown(why)}",
        icon=":material/smart_toy:",
    )
else:
    st.success(
        f"**Active model: {escape_markdown(label)}.** {escape_markdown(why)}",
        icon=":material/smart_toy:",
    )

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


ALL_ROOMS, OWN_ROOMS = "All rooms", "Rooms outside experiments"


def room_filters() -> dict:
    """The filter row above the rooms table, as keywords of ``rooms.overview``."""
    f1, f2, f3 = st.columns([3, 2, 2])
    search = f1.text_input(
        "Search", key="home-search", placeholder="name, condition or #id", icon=":material/search:"
    )
    statuses = f2.multiselect(
        "Status",
        sorted(STATUSES),
        key="home-status",
        placeholder="any status",
        format_func=status_word,
    )
    experiments = {OWN_ROOMS: None, ALL_ROOMS: None} | {
        f"#{e.id} {e.name}": e.id for e in browse.list_experiments(db, archived=False, limit=None)
    }
    scope = f3.selectbox(
        "Experiment",
        list(experiments),
        key="home-experiment",
        help="Experiment rooms are left out by default: pick an experiment, or All rooms.",
    )
    d1, d2, d3, d4 = st.columns([2, 2, 2, 2], vertical_alignment="bottom")
    since = d1.date_input("Created from", value=None, key="home-from")
    until = d2.date_input("Created until", value=None, key="home-until")
    sort = d3.selectbox("Sort by", list(browse.ROOM_SORTS), key="home-sort")
    archived = d4.toggle("Show archived", key="home-archived")
    filters: dict = {
        "search": search or None,
        "status": statuses or None,
        "sort": sort,
        "archived": None if archived else False,
        "created_after": rooms.day_bound(since),
        "created_before": rooms.day_bound(until, next_day=True),
    }
    if scope == OWN_ROOMS:
        filters["in_experiment"] = False
    elif scope != ALL_ROOMS:
        filters["experiment_id"] = experiments[scope]
    return filters


def rooms_overview(filters: dict, page: int) -> None:
    table, total = rooms.overview(db, offset=(page - 1) * rooms.HOME_PAGE_SIZE, **filters)
    table = table.assign(cost=rooms.cost_texts(table)).drop(columns=["unpriced_calls"])
    if table.empty:
        if browse.count_rooms(db) == 0:
            st.info("No rooms yet: start one above.")
        else:
            st.info(
                "No room matches these filters: change the search, status, experiment or dates."
            )
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
            "experiment_id": st.column_config.NumberColumn("experiment", format="#%d"),
            "cost": st.column_config.TextColumn("cost so far"),
            "unpriced_calls": None,
            "last_message": st.column_config.TextColumn("last message", width="large"),
        },
    )
    if picked.selection.rows:
        chosen = int(table.iloc[picked.selection.rows[0]]["room_id"])
        st.switch_page("pages/room.py", query_params={"room": str(chosen)})
    first = (page - 1) * rooms.HOME_PAGE_SIZE + 1
    st.caption(
        f"Rooms {first:d}-{first + len(table) - 1:d} of {total:,}. Select a row to open the room."
    )


heading = st.empty()  # filled once the filters are known: the count is of the rooms listed
manage.show_notice()
filters = room_filters()
matching = browse.count_rooms(db, **{k: v for k, v in filters.items() if k != "sort"})
hidden = browse.count_rooms(db, in_experiment=True, archived=False)
if filters.get("in_experiment") is False and hidden:
    heading.subheader(f"Rooms ({matching:,}; {hidden:,} more in experiments)")
    st.caption(f"{hidden:,} experiment room(s) not listed: pick an experiment or All rooms.")
else:
    heading.subheader(f"Rooms ({matching:,})")
total_pages = max(1, -(-matching // rooms.HOME_PAGE_SIZE))
if st.session_state.get("home-page", 1) > total_pages:
    st.session_state["home-page"] = total_pages  # fewer rooms match now
page = int(st.session_state.get("home-page", 1))
busy = browse.count_rooms(db, status="running") > 0
if busy:
    st.fragment(rooms_overview, run_every=OVERVIEW_REFRESH_SECONDS)(filters, page)
else:
    rooms_overview(filters, page)
if total_pages > 1:
    st.number_input("Page", 1, total_pages, key="home-page", width=160)
with st.expander("Manage a room (rename, archive, delete)", icon=":material/tune:"):
    target = st.number_input("Room #", min_value=1, step=1, value=None, key="home-manage-id")
    if target is not None:
        try:
            record = browse.get_room(db, int(target))
        except LookupError:
            st.warning(f"There is no room {int(target)}.")
        else:
            manage.room_panel(db, record)
