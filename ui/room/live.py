"""The live room view: the transcript as it grows, and a status line, polled cheaply.

How it stays cheap (docs/design.md, "The UI is a view over the database": the UI is a view over the database):
- every write to a room bumps ``rooms.updated_at`` or the newest seq, so a primary-key read of the
  room row and one index probe tell whether anything changed; only then are the events after the
  last *settled* seq fetched (the open turn, if any, is fetched again until it settles), and kept
  in ``st.session_state``;
- the transcript is drawn with the page; a tiny fragment (it draws nothing) checks those two
  values every ``FAST_SECONDS`` while the room is running and every ``SLOW_SECONDS`` when it is
  idle (settled, paused, stopped, waiting for a person), and reruns the page once when they
  changed, so transcript, status line and controls always agree and nothing is redrawn while
  nothing happens. With ``runner.postScriptGC = false`` (``.streamlit/config.toml``) a poll costs
  the server a few milliseconds: about 0.1% of a core per idle tab, under 1% per tab on a running
  room (``benchmarks/live_view.py``).

A streaming turn (docs/streaming.md) is drawn by that same fragment, not by the page: its bubble
shows the turn's partial draft (``browse.room_draft``: a draft write changes neither the room row
nor the log, so the page never reruns for it), read every ``DRAFT_SECONDS`` while the turn
streams or was just claimed (``poll_seconds``: a turn whose model does not stream, or a room with
streaming off, is polled at the usual rate), with a "Stop drafting" button for a person who may
moderate. When the turn commits, the marker
changes and the page reruns once: the message is drawn where the bubble was.

Message bodies and names are drawn as plain text: ``<script>`` shows as ``<script>``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import streamlit as st

from conversation import browse, worker
from conversation.rooms.engine.kinds import Form, may_stream, shown
from conversation.rooms.engine.kinds.showing import state_note
from conversation.termination.budget import Budget, Spend
from conversation.vocabulary import (
    RUNNABLE_ROOM_STATUSES,
    EventKind,
    HumanMessage,
    LogEntry,
    RoomStatus,
    entry_of,
)
from settings import SETTINGS
from ui.results import coding
from ui.widgets import avatar, escape_markdown

from . import provenance, rooms

FAST_SECONDS = SETTINGS.ui_poll_seconds
SLOW_SECONDS = SETTINGS.ui_idle_poll_seconds
#: How often a running turn's partial draft is read (the first text is on screen within this).
DRAFT_SECONDS = SETTINGS.ui_draft_poll_seconds
#: How long after its claim a turn with no draft yet is still polled at ``DRAFT_SECONDS``.
DRAFT_GRACE = timedelta(seconds=3)
MAX_SHOWN = 200
#: How many of a room's newest events the Room page reads and draws on first view; "Show
#: earlier messages" reads ``EARLIER_PAGE`` more each time (a room of 10,000 events opens as
#: fast as one of 50: every event drawn is a few elements the browser must build).
FIRST_PAGE = SETTINGS.ui_first_page
EARLIER_PAGE = 200
#: Height of the Room page's scrolling transcript box, in pixels.
TRANSCRIPT_HEIGHT_PX = 560
#: A room polled at ``FAST_SECONDS`` (the vocabulary's: a worker may drive it).
ACTIVE_STATUSES = RUNNABLE_ROOM_STATUSES


@dataclass
class LiveCache:
    """What a browser session has already read of one room's log, each event parsed once into
    its typed entry (``vocabulary.LogEntry``; rows given at construction are parsed then)."""

    marker: tuple[Any, ...] = ()
    events: dict[int, LogEntry] = field(default_factory=dict)
    settled_upto: int = 0  # every event up to this seq is in a final state
    # The events up to this seq were not read (the Room page reads a room's newest page first;
    # seqs are contiguous, 1, 2, ... in a room, so this is also how many there are).
    unread_upto: int = 0

    def __post_init__(self) -> None:
        self.events = {seq: entry_of(event) for seq, event in self.events.items()}

    def ordered(self) -> list[LogEntry]:
        return [self.events[s] for s in sorted(self.events)]

    def open_turn(self) -> LogEntry | None:
        """The room's open turn (running, a draft, interrupted) among the events read."""
        for seq in sorted(self.events, reverse=True):
            if self.events[seq].is_open:
                return self.events[seq]
        return None


def _cache(room_id: int) -> LiveCache:
    key = f"_live:{room_id}"
    if key not in st.session_state:
        st.session_state[key] = LiveCache()
    return st.session_state[key]


def shown_count(room_id: int) -> int:
    """How many of the room's newest events this browser session draws (``FIRST_PAGE``, more
    after "Show earlier messages")."""
    return int(st.session_state.get(f"_live-shown:{room_id}", FIRST_PAGE))


def refresh(db: Any, room_id: int) -> tuple[Any, LiveCache]:
    """Read the room row; fetch new or unsettled events only if the room changed. The first read
    of a session fetches the newest ``shown_count`` events only, by seq (one index range)."""
    room = browse.get_room(db, room_id)
    cache = _cache(room_id)
    marker = _marker(db, room)
    if marker != cache.marker:
        if not cache.marker:
            cache.unread_upto = cache.settled_upto = max(0, marker[-1] - shown_count(room_id))
        for event in browse.events(db, room_id, after_seq=cache.settled_upto):
            cache.events[event.seq] = entry_of(event)
        cache.settled_upto = _settled_upto(cache)
        cache.marker = marker
    return room, cache


def _marker(db: Any, room: Any) -> tuple[Any, ...]:
    """What changes whenever the log or the room does: one primary-key read and one index probe
    (claiming a turn adds a row without touching the room, so the newest seq is part of it)."""
    return (room.status, room.updated_at, room.stop_reason, browse.latest_seq(db, room.id))


def no_answer(room: Any, status: str, marker: tuple[Any, ...]) -> rooms.NoAnswer | None:
    """What the post form says before a person sends (``ui.room.rooms.no_answer``), shared by
    every session of this server until the room changes (``marker``, from :func:`refresh`).

    Why: it reads the room's whole log (the turns a limit counts), 0.5 s for 10,000 events, and
    a person opening a long room paid it on every first view, on the core the browser draws
    with. Keyed by the same marker that tells the live view the room changed, so it is exactly
    as current as the transcript it is drawn under."""
    return _no_answer(room.db.url, room.id, status, marker, room)


@st.cache_data(max_entries=256, show_spinner=False)
def _no_answer(
    url: str, room_id: int, status: str, marker: tuple[Any, ...], _room: Any
) -> rooms.NoAnswer | None:
    return rooms.no_answer(_room, status)


def show_earlier(db: Any, room_id: int) -> None:
    """``on_click`` of "Show earlier messages": read the ``EARLIER_PAGE`` events before the
    oldest one read, and draw that many more from now on in this session."""
    st.session_state[f"_live-shown:{room_id}"] = shown_count(room_id) + EARLIER_PAGE
    cache = _cache(room_id)
    if not cache.unread_upto:  # all read already (the room grew while shown): draw more of it
        return
    start = max(0, cache.unread_upto - EARLIER_PAGE)
    for event in browse.events(db, room_id, after_seq=start, limit=cache.unread_upto - start):
        cache.events[event.seq] = entry_of(event)
    cache.unread_upto = start


def forget(room_id: int) -> None:
    """Drop the cached log (after an action that rewrote events, e.g. an approval with edits)."""
    st.session_state.pop(f"_live:{room_id}", None)


def _settled_upto(cache: LiveCache) -> int:
    upto = cache.settled_upto
    for seq in sorted(s for s in cache.events if s > upto):
        if cache.events[seq].is_open:
            break
        upto = seq
    return upto


def waiting_for_server(turn: Any) -> str | None:
    """``waiting for the model server (retry in 20 s)`` while a turn's server is down (its error
    code ``server_unavailable``, recorded by the engine), else None."""
    from conversation.models.retries import SERVER_UNAVAILABLE

    error, at = turn.error or {}, turn.next_attempt_at
    if error.get("code") != SERVER_UNAVAILABLE or at is None:
        return None
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    left = max(0, round((at - datetime.now(UTC)).total_seconds()))
    return f"waiting for the model server (retry in {left} s)"


def status_line(room: Any, cache: LiveCache, recovery: Any = None) -> str:
    """Who is answering, or why nothing happens, in one sentence. ``recovery``: the room's turn in
    flight lost its process (``conversation.worker.recovering``), said instead of "answering"."""
    turn = cache.open_turn()
    reason = f": {room.stop_reason}" if room.stop_reason else ""
    if turn is not None and turn.is_draft:
        return f"{turn.speaker}'s draft is waiting for approval."
    if turn is not None and turn.is_interrupted:
        said = f"{turn.speaker}'s turn was interrupted; resume or abandon it."
        return f"{_word(room.status)}: {said}" if room.status != RoomStatus.RUNNING else said
    if room.status == RoomStatus.RUNNING:
        if turn is not None:
            waiting = waiting_for_server(turn.row)
            if waiting:
                return f"{turn.speaker}'s turn is {waiting}."
            if recovery is not None and turn.is_running:
                said = recovery.sentence(f"{turn.speaker}'s turn")
                return said[0].upper() + said[1:] + "."
            attempts = turn.row.attempts
            retry = f" (attempt {attempts + 1})" if attempts else ""
            return f"{turn.speaker} is answering…{retry}"
        return "Running: deciding who speaks next…"
    what = _STATUS_HINTS.get(room.status, f"{reason}.")
    return _word(room.status) + what


#: What the status line adds after the status word every page uses (``rooms.status_words``).
_STATUS_HINTS = {
    RoomStatus.IDLE: ": post a message to open the first activity.",
    RoomStatus.SETTLED: ": everyone had their say. Post a message to start a new activity.",
    RoomStatus.PAUSED: ": resume to let the agents go on.",
}


def _word(status: str) -> str:
    from conversation.rooms.status_words import status_word

    word = status_word(status)
    return word[:1].upper() + word[1:]


def render_event(event: Any, roster: Sequence[str], tags: Sequence[str] | None = None) -> None:
    """One log entry (a stored row or its typed entry) as its kind's handler shows it
    (``rooms.engine.kinds.shown``): a chat message (bodies as plain text), a one-line notice or
    a folded box, with its provenance (``ui.room.provenance``): private recipients, who acted and
    when, why the speaker was chosen, cache hits, and an edit's original draft, denied drafts
    and candidates not chosen one click away. ``tags``: the message's qualitative-coding
    labels, in a line under it."""
    entry = entry_of(event)
    look = shown(entry)
    if look.form is Form.FOLDED:
        with st.expander(look.line_with(escape_markdown)):
            st.text(look.body)
    elif look.form is Form.NOTE:
        icon = f":material/{look.icon}: " if look.icon else ""
        st.caption(icon + look.line_with(escape_markdown))
        for title, text in look.behind:
            with st.expander(escape_markdown(title)):
                st.text(text)
    else:
        speaker = entry.speaker
        with st.chat_message(speaker, avatar=avatar(speaker, roster, entry.kind)):
            mine = isinstance(entry, HumanMessage) and speaker == st.session_state.get("human_name")
            label = escape_markdown(speaker) + (" (you)" if mine else "")
            st.caption(f"**{label}**{look.line}")
            st.text(look.body)
            if tags:
                st.caption(escape_markdown(coding.tags_line(tags)))
            if look.provenance:
                _provenance(entry)
        return
    if look.provenance:
        _provenance(entry)


def _provenance(event: LogEntry) -> None:
    """The event's provenance notes (one caption) and its one-click texts (expanders)."""
    notes = provenance.marks(event)
    if notes:
        st.caption(escape_markdown(" · ".join(notes)))
    for title, texts in provenance.one_click_texts(event):
        with st.expander(escape_markdown(title)):
            for text in texts:
                st.text(text)


def render_transcript(
    room: Any,
    cache: LiveCache,
    roster: Sequence[str],
    *,
    db: Any = None,
    height: int | None = None,
    skip: Any = None,
    shown: int = MAX_SHOWN,
    earlier: Callable[[], None] | None = None,
) -> Any:
    """The status line and the last ``shown`` events; with ``db``, each tagged message shows
    its tags (read for all shown messages in one query). ``height``: the events go in a box of
    that many pixels that scrolls and follows the newest message (the status line stays above).
    ``skip``: an event drawn elsewhere (the streaming turn, drawn by the live fragment).
    ``earlier``: the ``on_click`` of a "Show earlier messages" button above the oldest event
    drawn (without it, the page points to Results for the rest). Returns the events'
    container (None when there is no event yet), for what goes after them."""
    # After a crash a turn stays "running" until a restarted process takes it over: say so.
    recovery = None
    if db is not None and room.status == RoomStatus.RUNNING:
        recovery = worker.recovering(db, room_id=room.id)
    # The line quotes names and the stop reason (text a person or a model wrote).
    st.info(escape_markdown(status_line(room, cache, recovery)), icon=":material/forum:")
    events = cache.ordered()
    if not events:
        st.caption("No messages yet.")
        return None
    box = st.container(height=height, autoscroll=True) if height else st.container()
    with box:
        hidden = max(0, len(events) - shown)
        _earlier_note(hidden + cache.unread_upto, room.id, earlier)
        _render_events(events[hidden:], roster, db, skip)
    return box


def _earlier_note(hidden: int, room_id: int, earlier: Callable[[], None] | None) -> None:
    if not hidden:
        return
    if earlier is None:
        st.caption(f"{hidden} earlier events are not shown here; see Results for the full log.")
        return
    st.button(
        f"Show earlier messages ({hidden:,} not shown)",
        key=f"earlier-{room_id}",
        icon=":material/expand_less:",
        on_click=earlier,
    )


def _render_events(events: Sequence[LogEntry], roster: Sequence[str], db: Any, skip: Any) -> None:
    tags = coding.labels_by_event(db, events) if db is not None else {}
    activity = None
    for event in events:
        row = event.row
        if isinstance(event, HumanMessage) and row.activity != activity:
            st.divider()
            st.caption(f"Activity {row.activity}")
            activity = row.activity
        if skip is not None and row.id == skip.id:
            continue
        render_event(event, roster, tags.get(int(row.id)) if row.id is not None else None)


def spend_line(spent: Spend, budget: Budget | None = None) -> str:
    """What the room spent (every recorded model call), against its budget if it has one."""
    if budget is None:
        return f"Spent: {spent.tokens_text}, {spent.cost_text}; no budget"
    return f"Spent: {budget.describe(spent)} budget"


def live_transcript(
    db: Any,
    room_id: int,
    roster: Sequence[str],
    *,
    budget: Budget | None = None,
    polled: tuple[Any, LiveCache] | None = None,
    stop: Callable[[int], None] | None = None,
) -> None:
    """Draw the transcript and keep it current (see the module doc for the polling rules),
    with what the room spent against ``budget``. ``polled``: what the page already read with
    ``refresh`` and drew its status line and controls from; the poll compares against exactly
    that, so a change after it reruns the page (a second read here could see a newer room than
    the page's header and controls, and the poll would never rerun to bring them up to date).
    ``stop(turn_id)``: stops a streaming draft (shown to a person who may moderate)."""
    room, cache = polled if polled is not None else refresh(db, room_id)
    running = streaming_turn(room, cache)
    # The log scrolls in a box that follows the newest message: the page does not grow with it,
    # so the controls and a draft's Approve / Deny beside it stay in view while reading it.
    box = render_transcript(
        room,
        cache,
        roster,
        db=db,
        height=TRANSCRIPT_HEIGHT_PX,
        skip=running,
        shown=shown_count(room_id),
        earlier=lambda: show_earlier(db, room_id),
    )
    drawn = cache.marker

    draft = browse.partial_draft(db, int(running.id)) if running is not None else None
    interval = poll_seconds(room, running, draft)

    def watch() -> None:
        # The only work on a poll: one primary-key read and one index probe. When anything
        # changed, the whole page reruns once (transcript, status line and controls together).
        if _marker(db, browse.get_room(db, room_id)) != drawn:
            st.rerun()
        if running is not None:  # and the streaming turn's draft, drawn here only
            now = browse.partial_draft(db, int(running.id))
            if poll_seconds(room, running, now) != interval:
                st.rerun()  # a draft began (or never will): poll at the rate that fits
            draft_bubble(running, now, roster, stop=stop)

    with box if box is not None else st.container():  # the growing draft: under the newest
        st.fragment(watch, run_every=interval)()
    # One aggregate query: the cache holds only the events this session read.
    st.caption(escape_markdown(spend_line(Spend(*browse.room_spend(db, room_id)), budget)))


def poll_seconds(room: Any, running: Any | None, draft: Any | None) -> float:
    """How often the live fragment polls: ``DRAFT_SECONDS`` while a turn's reply streams (its
    draft is there) or may be about to (claimed under ``DRAFT_GRACE`` ago: a streamed
    call writes its first, empty draft at once), else ``FAST_SECONDS`` for a running room and
    ``SLOW_SECONDS`` for an idle one. A turn that does not stream (its model cannot, or it waits
    for a model server) is thus not read a few times a second for a draft that never comes."""
    if running is not None:
        claimed = running.updated_at
        if claimed is not None and claimed.tzinfo is None:
            claimed = claimed.replace(tzinfo=UTC)
        young = claimed is not None and datetime.now(UTC) - claimed < DRAFT_GRACE
        if draft is not None or young:
            return DRAFT_SECONDS
    return FAST_SECONDS if room.status in ACTIVE_STATUSES else SLOW_SECONDS


def streaming_turn(room: Any, cache: LiveCache) -> Any | None:
    """The stored row of the running speaking turn of a running room whose reply may stream,
    or None (also when the room's ``streaming`` setting is off)."""
    turn = cache.open_turn()
    if room.status != RoomStatus.RUNNING or turn is None or not turn.is_running:
        return None
    if (room.config or {}).get("streaming", True) is False:
        return None
    if not may_stream(turn):
        return None  # its kind's handler says (summaries, picks, drafted candidates do not)
    return turn.row


def draft_bubble(
    turn: Any, draft: Any, roster: Sequence[str], *, stop: Callable[[int], None] | None
) -> None:
    """The running turn's bubble: its partial draft as plain text (``…`` before the first
    words), and "Stop drafting" for a person who may moderate (``stop``)."""
    with (
        st.container(key=f"draft-{turn.id}"),
        st.chat_message(turn.speaker, avatar=avatar(turn.speaker, roster, EventKind.AGENT)),
    ):
        label = escape_markdown(turn.speaker)
        if draft is None:
            st.caption(f"**{label}** · #{int(turn.seq)}{state_note(entry_of(turn))}")
            st.text("…")
            return
        st.caption(f"**{label}** · #{int(turn.seq)} · drafting… ({len(draft.text):,} characters)")
        st.text(draft.text + " ▍")
        if stop is not None:
            if draft.stop_by:
                st.caption(f"Stopping (asked by {escape_markdown(draft.stop_by)})…")
            else:
                st.button(
                    "Stop drafting",
                    key=f"stop-draft-{turn.id}",
                    icon=":material/stop_circle:",
                    help="Cancel this reply now: the draft is denied as 'stopped while "
                    "drafting' (recorded with your name) and the agent tries again.",
                    on_click=stop,
                    args=(int(turn.id),),
                )


__all__ = [
    "ACTIVE_STATUSES",
    "DRAFT_SECONDS",
    "draft_bubble",
    "poll_seconds",
    "streaming_turn",
    "FAST_SECONDS",
    "LiveCache",
    "SLOW_SECONDS",
    "EARLIER_PAGE",
    "FIRST_PAGE",
    "shown_count",
    "show_earlier",
    "forget",
    "live_transcript",
    "no_answer",
    "refresh",
    "render_event",
    "render_transcript",
    "spend_line",
    "status_line",
]
