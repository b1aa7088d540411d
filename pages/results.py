"""Results: every room and experiment as filterable tables, a transcript reader, charts (click to
filter), follow-up analysis with EDSL questions, side-by-side comparison, judge panels with
agreement, and exports."""

from typing import Any

import streamlit as st

from conversation import analysis, browse
from conversation.rooms.status_words import status_word
from ui import experiments as ex
from ui.bootstrap import actor, database, page_setup
from ui.params import parse_id
from ui.results import analysis_panel, cached, charts, condition_charts, condition_stats, tables
from ui.results import judges as judges_panel
from ui.results.coding import results_coding
from ui.results.static_table import static_table
from ui.results.streamed_export import experiment_exports
from ui.room.live import LiveCache, render_transcript
from ui.room.rooms import cost_texts
from ui.study.exports import study_exports_panel
from ui.widgets import escape_markdown, synced_selectbox

page_setup()

db = database()
me = actor()
PAGE_SIZE = 100
TRANSCRIPT_TAIL = 50  # events a transcript shows first (drawing 200 costs half a second)
LONG_TAIL = 200  # at most (ui.room.live.MAX_SHOWN)
MESSAGES_SHOWN = 1_000  # rows of the Charts tab's messages table (sending 10,000 costs seconds)

st.title("Results")
# Lazy containers (key + on_change="rerun"): a closed expander or tab runs nothing and sends
# nothing, so the first view is the rooms table alone. Drawing six Plotly figures and a
# 1,000-row messages table kept Chromium 2-3 s from showing that table (docs/deploy.md, sizing).
study_box = st.expander(
    "Study exports: participants, surveys, recruitment ids",
    icon=":material/download:",
    key="res-study-exports",
    on_change="rerun",
)
if study_box.open:
    with study_box:
        study_exports_panel(db)  # ui.study.exports (docs/studies.md)

# --- which rooms -----------------------------------------------------------------------------
ex.catch_up(db)  # an experiment whose rooms all finished is recorded as done
linked = parse_id(st.query_params.get("experiment"), "experiment")  # e.g. from Experiments
if linked.problem:
    st.warning(escape_markdown(linked.problem))
show_archived = st.toggle("Show archived experiments and rooms", key="res-show-archived")
exp_names = tables.experiment_choices(db, show_archived=show_archived, linked=linked.value)
wanted = next((label for label, eid in exp_names.items() if eid == linked.value), tables.ALL_ROOMS)
if linked.value is not None and exp_names[wanted] is None:
    st.error(f"There is no experiment {linked.value}: showing all rooms.")
f1, f2, f4, f3 = st.columns([2, 2, 2, 1])
with f1:
    chosen_exp = synced_selectbox("Experiment", list(exp_names), wanted, key="res-exp")
experiment_id = exp_names[chosen_exp]
archived = tables.rooms_archived_filter(
    db, show_archived=show_archived, experiment_id=experiment_id
)
statuses = f2.multiselect(
    "Status", sorted(tables.STATUSES), key="res-status", placeholder="any status"
)
total = browse.count_rooms(
    db, status=statuses or None, experiment_id=experiment_id, archived=archived
)
pages = max(1, -(-total // PAGE_SIZE))
page_no = f3.number_input("Page", 1, pages, 1, key="res-page") if pages > 1 else 1
rooms = cached.rooms_summary(
    db,
    status=statuses or None,
    experiment_id=experiment_id,
    archived=archived,
    limit=PAGE_SIZE,
    offset=(page_no - 1) * PAGE_SIZE,
)

short_names = tables.condition_names(db, experiment_id)  # {condition: short name}, in order
rooms = tables.with_short_names(rooms, short_names)

# Chart clicks (stored by the charts below on a previous run) narrow the rooms table, and keep
# narrowing it while another tab is open.
clicks = charts.kept_clicks(st.session_state, ("chart-reasons", "chart-outcomes"), "res-clicks")
reason_filter, condition_filter = clicks["chart-reasons"], clicks["chart-outcomes"]
text_filter = f4.text_input("Name or condition contains", key="res-text")
rooms = tables.filter_rooms(
    rooms, stop_reasons=reason_filter, conditions=condition_filter, text=text_filter
)
if reason_filter or condition_filter:
    st.caption(
        "Filtered by chart selection: "
        + escape_markdown(", ".join(str(v) for v in [*reason_filter, *condition_filter]))
        + " (in the Charts tab, click the chart background or double-click to clear)."
    )

st.subheader(f"Rooms ({len(rooms)} shown of {total})")
if rooms.empty:
    if browse.count_rooms(db) == 0:
        st.info("No rooms yet. Create one on the Home page or run an experiment.")
    else:
        st.info(
            "No room matches these filters. Change the experiment, status or text filter, or "
            "clear the chart selection."
        )
    st.stop()
# The first view shows the rooms as a static table: a data grid's JavaScript (1.2 MB, loaded on
# a page's first grid) kept Chromium from showing any page that holds one before about 1.7 s
# (docs/deploy.md, "Sizing"). The grid, with the row selection the tabs below read, is drawn
# when the person asks to select rooms.
selecting = st.toggle(
    "Select rooms",
    key="res-select",
    help="Shows the rooms as a grid whose rows you can tick (and sort, search, or download as "
    "CSV): the tabs below then use the ticked rooms instead of every room shown.",
)
if selecting:
    table = st.dataframe(
        tables.rooms_table(rooms),
        hide_index=True,
        on_select="rerun",
        selection_mode="multi-row",
        key="res-rooms",
        width="stretch",
    )
    picked = [int(rooms.iloc[i]["room_id"]) for i in table.selection.rows]
else:
    static_table(tables.rooms_table(rooms), key=tables.ROOMS_TABLE_KEY)
    picked = []
selected = picked or [int(r) for r in rooms["room_id"]]
st.caption(
    f"{len(picked)} room(s) selected."
    if picked
    else "No rows selected: using every room shown."
    if selecting
    else "The tabs below use every room shown: turn on *Select rooms* to tick some."
)

# The latest analysis of the experiment: charted by condition (Charts, Statistics). With "All
# rooms" the latest analysis of whichever experiment ran last would be charted as if it covered
# every room.
latest = tables.latest_analysis(db, experiment_id) if experiment_id is not None else None


def charts_section(rooms: Any, selected: list[int]) -> None:
    events = cached.events_frame(db, selected, kinds=["human", "agent", "pass"], provenance=False)
    speaker_filter = charts.clicked_values(st.session_state.get("chart-speakers"))
    c1, c2 = st.columns(2)
    c1.plotly_chart(charts.speaker_activity(events), key="chart-speakers", on_select="rerun")
    c2.plotly_chart(charts.message_length(events), key="chart-length")
    c3, c4 = st.columns(2)
    c3.plotly_chart(charts.latency(events), key="chart-latency")
    c4.plotly_chart(charts.tokens_and_cost(events), key="chart-tokens")
    c5, c6 = st.columns(2)
    c5.plotly_chart(
        charts.stop_reasons(rooms[rooms["room_id"].isin(selected)]),
        key="chart-reasons",
        on_select="rerun",
    )
    if latest is not None:
        answers = browse.analysis_frame(db, latest.id)
        answers = answers[answers["room_id"].isin(selected)]
        planned = tables.planned_by_label(rooms[rooms["room_id"].isin(selected)], short_names)
        c6.plotly_chart(
            condition_charts.outcomes_by_condition(
                answers, question=latest.name, names=short_names, planned=planned
            ),
            key="chart-outcomes",
            on_select="rerun",
        )
    elif experiment_id is None:
        c6.info("Pick an experiment above to chart its analysis outcomes by condition.")
    else:
        c6.info("Run an analysis (Analysis tab) to chart outcomes by condition.")
    messages_table(events, speaker_filter)


def messages_table(events: Any, speaker_filter: list) -> None:
    shown = events if not speaker_filter else events[events["speaker"].isin(speaker_filter)]
    st.markdown(
        f"**Messages** ({len(shown)})"
        + (
            ", speaker: " + escape_markdown(", ".join(map(str, speaker_filter)))
            if speaker_filter
            else ""
        )
    )
    if len(shown) > MESSAGES_SHOWN:  # a 10,000-message room: the table is the first of them
        st.caption(
            f"The first {MESSAGES_SHOWN:,} are listed; every message is in the Export tab "
            "(events CSV) and the Transcript tab."
        )
    st.dataframe(tables.events_table(shown.head(MESSAGES_SHOWN)), hide_index=True, width="stretch")


# The Transcript and Compare tabs are fragments: a widget of theirs (the room, how many events,
# both transcripts) reruns that tab only, not the rooms table above.
@st.fragment
def transcript_panel(rooms: Any, selected: list[int]) -> None:
    names = tables.room_labels(rooms)
    room_id = st.selectbox(
        "Room", selected, format_func=lambda r: names.get(r, f"#{r}"), key="res-transcript"
    )
    if room_id is not None:
        room = browse.get_room(db, room_id)
        st.page_link(
            "pages/room.py",
            label="Open live",
            icon=":material/open_in_new:",
            query_params={"room": str(room_id)},
        )
        last = browse.latest_seq(db, room_id)
        tail = TRANSCRIPT_TAIL
        if last > TRANSCRIPT_TAIL:
            tail = st.radio(
                f"Events shown (of {last:d})",
                [TRANSCRIPT_TAIL, LONG_TAIL],
                format_func=lambda n: f"the last {n}",
                horizontal=True,
                key="res-transcript-tail",
            )
            st.caption("The whole log is in the Export tab (events CSV, JSON).")
        render_transcript(
            room,
            LiveCache(events=tables.events_by_seq(db, room_id, tail=tail)),
            tables.roster(room),
            db=db,  # shows each message's coding tags
        )


@st.fragment
def compare_panel(rooms: Any, selected: list[int]) -> None:
    names = tables.room_labels(rooms)
    # Two transcripts cost as much as the rest of the page: drawn when asked for.
    show_both = st.toggle("Show both transcripts", key="cmp-transcripts")
    left, right = st.columns(2)
    for column, key, default in ((left, "cmp-a", 0), (right, "cmp-b", 1)):
        with column:
            # The first two rooms of the selection, following it as rows are ticked (a keyed
            # select box would otherwise keep the room it showed when one row was ticked).
            rid = synced_selectbox(
                "Room",
                selected,
                selected[min(default, len(selected) - 1)],
                format_func=lambda r: names.get(r, f"#{r}"),
                key=key,
            )
            room = browse.get_room(db, rid)
            stats = rooms[rooms["room_id"] == rid]
            if not stats.empty:
                row = stats.iloc[0]
                m1, m2, m3 = st.columns(3)
                m1.metric("Messages", int(row["messages"]))
                m2.metric("Words", int(row["words"]))
                m3.metric("Cost", cost_texts(stats)[0])
                st.caption(
                    escape_markdown(
                        f"Status: {status_word(row['status'])}"
                        + (
                            f" ({row['stop_reason']})"
                            if isinstance(row["stop_reason"], str)
                            else ""
                        )
                    )
                )
            if show_both:
                render_transcript(
                    room,
                    LiveCache(events=tables.events_by_seq(db, rid, tail=TRANSCRIPT_TAIL)),
                    tables.roster(room),
                    db=db,
                )


def export_section(rooms: Any, selected: list[int]) -> None:
    st.caption(
        f"{len(selected)} room(s): the selected rows of the rooms table, or every room shown. "
        "Files are built when you click."
    )
    st.download_button(
        "Rooms (CSV)",
        tables.rooms_table(rooms).to_csv(index=False),
        file_name="rooms.csv",
        mime="text/csv",
        key="dl-rooms",
        on_click="ignore",
    )
    st.download_button(
        "Events of the selected rooms (CSV)",
        lambda: browse.events_frame(db, selected).to_csv(index=False),
        file_name="events.csv",
        mime="text/csv",
        key="dl-events",
        on_click="ignore",
    )
    st.download_button(
        "Selected rooms (JSON export)",
        lambda: analysis.export_json(db, selected),
        file_name="rooms.json",
        mime="application/json",
        key="dl-json",
        on_click="ignore",
    )
    st.download_button(
        "Selected rooms as EDSL Results (JSON)",
        lambda: analysis.export_edsl_results(db, selected),
        file_name="results.json",
        mime="application/json",
        key="dl-edsl",
        on_click="ignore",
    )
    if experiment_id is not None:
        every = browse.room_ids(db, experiment_id=experiment_id, archived=archived)
        st.markdown(
            f"**Every room of this experiment** ({len(every):,}, whatever the filters above): "
            "written to a file first, with a progress bar, then offered for download."
        )
        experiment_exports(db, every, f"experiment-{experiment_id}")


# One section at a time (a lazy tab: only the open one runs). The first is the transcript of the
# first room, what a researcher reads first; the charts load when their tab is opened.
SECTIONS = {
    "Transcript": lambda: transcript_panel(rooms, selected),
    "Charts": lambda: charts_section(rooms, selected),
    "Compare": lambda: compare_panel(rooms, selected),
    "Analysis": lambda: analysis_panel.render(db, me, experiment_id, selected, short_names),
    "Statistics": lambda: condition_stats.render(
        db, rooms[rooms["room_id"].isin(selected)], short_names, analysis=latest
    ),
    "Judges": lambda: judges_panel.render(db, experiment_id, selected, short_names),
    "Coding": lambda: results_coding(db, selected),  # tags: filter, counts, the coding CSV
    "Export": lambda: export_section(rooms, selected),
}
SECTION_NAMES = list(SECTIONS)  # program text
for tab, draw in zip(
    st.tabs(SECTION_NAMES, key="res-section", on_change="rerun"), SECTIONS.values(), strict=True
):
    if tab.open:
        with tab:
            draw()
