"""Room: pick or deep-link a room (``?room=ID``), watch it live, post messages, moderate, inspect
turns, read and change nothing behind its back: every action is one call into the Room API."""

import streamlit as st

from conversation import browse, study
from conversation.access import Action
from conversation.exceptions import (
    ConversationStateError,
    PermissionDenied,
    RequestConflictError,
)
from conversation.rooms.config import RoomConfig
from conversation.rooms.continuing import MAX_CONTINUE_TURNS
from conversation.rooms.room import MAX_MESSAGE_CHARS, Room
from conversation.rooms.status_words import status_word
from conversation.vocabulary import OPEN_ROOM_STATUSES, RESUMABLE_ROOM_STATUSES, RoomStatus
from ui.access import note
from ui.bootstrap import (
    actor,
    database,
    human_name,
    page_setup,
    request_id,
    spend_request_id,
    wake_runner,
)
from ui.params import parse_id
from ui.results.coding import tag_panel
from ui.room import rooms
from ui.room.branches import branch_tree, compare_branches, fork_panel
from ui.room.details import turn_details_panel
from ui.room.editing import breakpoint_notice, settings_panel
from ui.room.forms import create_room_form, import_room_form
from ui.room.live import forget, live_transcript, refresh
from ui.room.live import no_answer as live_no_answer
from ui.room.moderation import draft_panel
from ui.room.picker import room_picker
from ui.widgets import describe_spec, escape_markdown, limited_chat_input, text_title

#: The right-hand tabs; only the open one is drawn (``st.tabs(..., on_change="rerun")``).
ROOM_SECTIONS = ("Turn details", "Settings", "Fork & export", "Branches")

page_setup()
db = database()
me = actor()  # who acts: every verb below is checked against this role by the engine

linked = parse_id(st.query_params.get("room"), "room")
if linked.problem:
    st.warning(escape_markdown(linked.problem))
room_id = linked.value
# The room picker sits at the top, but is drawn after the room's messages (ui.room.picker: a
# pick moves the page before it runs): its query and widgets are not built before them.
picker_box = st.container()
if room_id is not None:
    try:
        browse.get_room(db, room_id)
    except LookupError:
        st.error(f"There is no room {room_id}. Pick another one or create a room.")
        room_id = None


def draw_picker(name: str | None = None) -> None:
    with picker_box:
        picked = room_picker(db, room_id, name)
    if picked != room_id:  # (a pick moved the page already; this covers any other way)
        if picked is None:
            st.query_params.pop("room", None)
        else:
            st.query_params["room"] = str(picked)
        st.rerun()


if room_id is None:
    draw_picker()
    st.title("Rooms")
    if not me.can(Action.CREATE_ROOM):
        note(Action.CREATE_ROOM)
        st.stop()
    new_tab, import_tab = st.tabs(["New room", "Import"])
    with new_tab:
        create_room_form(db)
    with import_tab:
        import_room_form(db)
    st.stop()
assert room_id is not None  # narrowed for the type checker: st.stop() ended the run above

shown_id: int = room_id
room = Room.open(db, shown_id)
# One read of the room for the whole page: the status line, the controls and the live transcript
# are drawn from it, and the live poll reruns the page as soon as the room differs from it.
record, polled = refresh(db, shown_id)
config = RoomConfig.from_dict(record.config)
roster = list(config.names)

text_title(record.name)  # copied, it is the name as typed (no invisible joiner)
facts = [
    f"**Status:** {escape_markdown(status_word(record.status))}",
    f"**Model:** {escape_markdown(describe_spec(config.model))}",
    f"**Turn taking:** {rooms.PLANNER_LABELS.get(str(config.planner.get('kind')), '?')}",
    f"**Stops:** {escape_markdown(rooms.describe_termination(config.termination))}",
]
if config.moderated:
    facts.append("**Moderated**")
if record.experiment_id is not None:
    facts.append(
        f"**Experiment** #{record.experiment_id}, {escape_markdown(record.condition or '')}"
    )
if record.parent_room_id is not None:
    facts.append(f"**Fork** of #{record.parent_room_id} at #{record.parent_seq}")
st.markdown(" · ".join(facts))  # markup-ok: each fact escapes its values where it is built
notice = st.session_state.pop(f"_notice:{room_id}", None)
if notice:
    st.warning(escape_markdown(notice))
breakpoint_notice(record)

left, right = st.columns([3, 2], gap="large")


def stop_drafting(turn_id: int) -> None:
    """ "Stop drafting" (a button of the live fragment): the worker streaming the reply sees it
    at its next draft write and records the denial with this person's name."""
    try:
        room.turn(turn_id).stop_drafting(actor=me)
    except (ConversationStateError, PermissionDenied, ValueError) as exc:
        st.session_state[f"_notice:{shown_id}"] = str(exc)


with left:
    live_transcript(
        db,
        room_id,
        roster,
        budget=config.budget,
        polled=(record, polled),
        stop=stop_drafting if me.can(Action.MODERATE) else None,
    )
draw_picker(record.name)


def act(action, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
    """Run one Room/Turn verb; a verb that no longer fits (another tab was faster) is reported."""
    try:
        action(*args, **kwargs)
    except (ConversationStateError, PermissionDenied, ValueError) as exc:
        st.session_state[f"_notice:{room_id}"] = str(exc)
    forget(shown_id)
    wake_runner()
    st.rerun()


with right:
    pending = room.pending()
    status = record.status
    controls, moderates = me.can(Action.CONTROL), me.can(Action.MODERATE)
    if not controls:
        note(Action.CONTROL)
    b1, b2, b3, b4 = st.columns(4)
    if b1.button(
        "Resume",
        key="ctl-resume",
        disabled=status not in RESUMABLE_ROOM_STATUSES or not controls,
        help="Let the agents go on after a pause or a failed turn. An idle, settled, ended or "
        "stopped room is started by a message.",
        width="stretch",
    ):
        act(room.resume, actor=me)
    if b2.button(
        "Pause",
        key="ctl-pause",
        # A room that may still take turns, or a settled one (not one already paused or ended).
        disabled=status not in OPEN_ROOM_STATUSES - {RoomStatus.PAUSED} | {RoomStatus.SETTLED}
        or not controls,
        width="stretch",
    ):
        act(room.pause, actor=me)
    if b3.button(
        "Stop",
        key="ctl-stop",
        # Stop ends a room that may still take turns; an ended room (stopped, settled,
        # terminated, failed) has none to stop: a message, or Resume after a failure, goes on.
        disabled=status not in OPEN_ROOM_STATUSES or not controls,
        width="stretch",
    ):
        act(room.stop, actor=me)
    if (
        b4.button(
            "Pass",
            key="ctl-pass",
            disabled=pending is None or not moderates,
            help="Skip the current agent's turn (it counts as a pass).",
            width="stretch",
        )
        and pending is not None
    ):
        act(pending.abandon if pending.entry.is_interrupted else pending.stop, actor=me)

    if pending is not None and pending.entry.is_open and not moderates:
        with st.container(border=True):
            st.text(f"{pending.speaker}'s turn waits for a moderator ({pending.state}).")
            note(Action.MODERATE)
    elif moderates:
        draft_panel(room, me, pending)
    if pending is not None and pending.entry.is_interrupted and moderates:
        with st.container(border=True):
            error = pending.error or {}
            st.markdown(f"**{escape_markdown(pending.speaker)}'s turn was interrupted**")
            st.text(f"{error.get('type', 'error')}: {error.get('message', '')}")
            c1, c2 = st.columns(2)
            if c1.button("Retry the turn", key=f"retry-{pending.id}"):
                act(pending.resume, actor=me)
            if c2.button("Abandon it", key=f"abandon-{pending.id}"):
                act(pending.abandon, actor=me)

    # Lazy: only the open tab runs and is sent (the browser builds the others' widgets and
    # tables only when one is opened: they cost a long room's first view about 0.3 s).
    details_tab, settings_tab, copy_tab, branches_tab = st.tabs(
        ROOM_SECTIONS, key="room-section", on_change="rerun"
    )
    if details_tab.open:
        with details_tab:
            turn_details_panel(db, shown_id, since=polled.unread_upto)
    if settings_tab.open:
        with settings_tab:
            settings_panel(db, shown_id, config, me)
    if branches_tab.open:
        with branches_tab:
            branch_tree(db, shown_id)
    if copy_tab.open:
        with copy_tab:
            fork_panel(db, shown_id, me, since=polled.unread_upto)
            # Built when clicked (a deferred download), not on every rerun: on a long room each
            # export reads and formats the whole log (about 0.5 s for 5,000 events).
            st.download_button(
                "Export JSON",
                lambda: rooms.export_text(room),
                file_name=f"room-{room_id}.json",
                mime="application/json",
                key=f"export-json-{room_id}",
                on_click="ignore",
            )
            st.download_button(
                "Export CSV",
                lambda: browse.events_frame(db, shown_id).to_csv(index=False),
                file_name=f"room-{room_id}.csv",
                mime="text/csv",
                key=f"export-csv-{room_id}",
                on_click="ignore",
            )

    coding_box = st.expander(
        "Code messages (qualitative tags)", key=f"code-open-{room_id}", on_change="rerun"
    )
    with coding_box:
        if coding_box.open:  # drawn when opened, like the tabs above
            # The messages this session read (a long room's newest page, more after "Show
            # earlier messages"), not the whole log again.
            tag_panel(db, shown_id, polled.ordered(), by=human_name())

    st.caption(
        "Address agents with "
        + escape_markdown(", ".join(f"@{n}" for n in roster))
        + ". A message starts a new activity."
    )
    private = st.multiselect(
        "Send privately to (optional)", roster, key=f"private-{room_id}", placeholder="everyone"
    )

# Across the page's width (not in the narrow column): two branches aligned message by message.
if len(browse.room_family(db, shown_id)) > 1:
    with st.expander("Compare two branches", icon=":material/compare_arrows:"):
        compare_branches(db, shown_id)

# The chat box is pinned to the bottom of the window (``st.bottom``); the refusal of a message
# over the limit is drawn right above it, and the callback puts the text back into the box
# before the page runs.
chat_key = f"chat-{room_id}"
posts = me.can(Action.POST)
# A study group's conversation that ended is over: a message would not be part of the study.
study_over = study.ended_study_room(db, room_id)
posts = posts and not study_over
# Said before the person sends: would an agent answer? A room at its turn limit (or with its
# budget spent) ends again at once after a message, so the form says so and offers to continue
# for more turns (a settings change recorded with the message).
# It reads the whole log (the turns a limit counts): once per change of the room, shared by
# every session (ui.room.live.no_answer).
no_answer = live_no_answer(room, status, polled.marker) if posts else None
continue_turns: int | None = None
restarts = (
    status == RoomStatus.STOPPED and posts and no_answer is None
)  # (a settled or ended room: a message starts a new activity)
slot = f"post-{room_id}"
drawn_request_id = request_id(slot)  # made with the box: a repeated submit is one message
with st.bottom:
    refusal = st.container()  # always drawn: the box keeps its place when a refusal comes or goes
    if study_over:
        st.caption(
            "This room is a study group's conversation, which has ended: it does not restart, "
            "and a message here would not be part of the study."
        )
    elif not posts:
        note(Action.POST)
    if no_answer is not None:
        st.warning(escape_markdown(no_answer.text))
        if no_answer.can_continue and me.can(Action.CREATE_ROOM):
            c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
            if c1.checkbox(
                "Continue with my message",
                key=f"continue-{room_id}",
                help="Raises the room's turn limit by this many agent turns, recorded as a "
                "settings change (a new version), in the same action as your message.",
            ):
                continue_turns = int(
                    c2.number_input(
                        "more agent turns",
                        min_value=1,
                        max_value=MAX_CONTINUE_TURNS,
                        value=no_answer.default_turns,
                        key=f"continue-turns-{room_id}",
                    )
                )
    elif restarts:
        st.caption(
            "This room has been stopped. Sending a message restarts it: the agents answer the "
            "new message."
        )
    message = limited_chat_input(
        f"Message the room as {human_name()}"
        + (
            f" (continues for {continue_turns} more turns)"
            if continue_turns
            else " (no agent will answer)"
            if no_answer is not None
            else " (restarts the room)"
            if restarts
            else ""
        ),
        key=chat_key,
        limit=MAX_MESSAGE_CHARS,
        above=refusal,
        disabled=not posts,
    )

if message:
    try:
        try:
            room.post(
                message,
                speaker=human_name(),
                request_id=drawn_request_id,
                to=private or None,
                actor=me,
                continue_turns=continue_turns,
            )
        except RequestConflictError:
            # The drawn id was already used for another text: this is a new message.
            spend_request_id(slot)
            room.post(
                message,
                speaker=human_name(),
                request_id=request_id(slot),
                to=private or None,
                actor=me,
            )
    except (ValueError, PermissionDenied, ConversationStateError) as exc:
        st.session_state[f"_notice:{room_id}"] = f"Not sent: {exc}"
    else:
        spend_request_id(slot)
        st.session_state.pop(f"continue-{room_id}", None)
        if continue_turns:
            st.session_state[f"_notice:{room_id}"] = (
                f"The room continues for {continue_turns} more agent turns: the agents answer "
                "your message."
            )
        elif no_answer is not None:
            st.session_state[f"_notice:{room_id}"] = (
                f"Your message was recorded; no agent will answer it ({no_answer.reason})."
            )
        elif restarts:
            st.session_state[f"_notice:{room_id}"] = "Your message restarted the room."
        wake_runner()
    st.rerun()
