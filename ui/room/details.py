"""The Room page's inspection panels: one turn's details, and the next prompt of an agent.
A prompt is rebuilt from the whole log, so each is drawn only while its expander is open.

A turn in a room with agent rules (issue 33) shows the agent's hand with its facts: whether it
raised it (``should_respond``), its reason, whether it was ready to end, and who decided (its
model, or a rule of the room that kept it down without a call).

Each is a fragment, so picking a turn or an agent reruns the panel only, not the page (the
transcript, the controls and the other tabs stay as drawn). Both read the room afresh when they
run, and draw every name and message as plain text.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from conversation import browse
from conversation.rooms.engine.kinds.hand import BY_MODEL, BY_RULE
from conversation.vocabulary import TURN_KINDS, RoomStatus, entry_of
from ui.widgets import escape_markdown, follow_latest_selectbox

from . import rooms

#: How many of the messages a turn saw its details list (the newest; all are in its prompt).
SAW_SHOWN = 20
#: Who decided a hand, as the details say it (``data["decision"]["by"]``).
DECIDED_BY = {BY_MODEL: "its model", BY_RULE: "a rule of the room (no call)"}


def hand_details(event: Any) -> dict[str, str]:
    """An agent's hand-raising decision stored with its turn, as the turn's details list it
    (empty for a turn without one)."""
    decision = entry_of(event).decision
    if decision is None:
        return {}
    by = str(decision.get("by") or "")
    return {
        "hand raised": "yes" if decision.get("should_respond") else "no (stayed silent)",
        "hand reason": str(decision.get("reason") or "-"),
        "ready to end": "yes" if decision.get("ready_to_end") else "no",
        "decided by": DECIDED_BY.get(by, by or "-"),
    }


@st.fragment
def turn_details_panel(db: Any, room_id: int, since: int = 0) -> None:
    """Pick a turn after seq ``since`` (the events the page read: a long room's newest page, more
    after "Show earlier messages"): its facts (model, tokens, cost, why it was chosen, ...), what
    it saw, the prompt it was asked (rebuilt from the whole log before it, so only when that
    expander is opened), and any denied drafts."""
    from conversation.rooms.room import Room

    room = Room.open(db, room_id)
    turns = browse.events(db, room_id, after_seq=since, kinds=TURN_KINDS)
    if not turns:
        st.caption("No agent turns yet." if not since else "No agent turn among these messages.")
        return
    turn_by_seq = {e.seq: e for e in turns}
    seq = follow_latest_selectbox(
        "Turn",
        [e.seq for e in reversed(turns)],
        format_func=lambda s: f"#{s} {turn_by_seq[s].speaker}",
        key=f"turn-pick-{room_id}",
        help="Turns of the messages shown; show earlier messages to pick an older one."
        if since
        else None,
    )
    event = turn_by_seq[seq]
    details = {**rooms.turn_details(event), **hand_details(event)}
    # Plain text, not a table: the Room page's first view then loads no data grid (its
    # JavaScript delayed a long room's messages by about 0.1 s, benchmarks/scale.py).
    width = max(map(len, details))
    st.text("\n".join(f"{name:<{width}}  {value}" for name, value in details.items()))
    st.caption("What the agent saw")
    saw = sorted(event.saw or [])
    if len(saw) > SAW_SHOWN:  # a turn of a long room saw thousands: all are in its prompt
        st.caption(f"{len(saw) - SAW_SHOWN:,} earlier messages: see the prompt it was asked.")
        saw = saw[-SAW_SHOWN:]
    if saw:  # one index range, from the first message shown
        by_seq = {e.seq: e for e in room.events(after_seq=saw[0] - 1, limit=saw[-1] - saw[0] + 1)}
        for s in saw:
            seen = by_seq.get(s)
            if seen is not None:
                st.text(f"#{s} {seen.speaker}: {seen.content}")
    asked_box = st.expander(
        "The prompt it was asked (rebuilt from the events before it)",
        key=f"turn-prompt-{room_id}",
        on_change="rerun",
    )
    with asked_box:
        if asked_box.open:
            asked = rooms.turn_prompt(room.config, room.events(limit=event.seq), event)
            st.code(asked.system_prompt, language=None, wrap_lines=True)
            st.code(asked.user_prompt, language=None, wrap_lines=True)
    for denial in entry_of(event).denials:
        st.text(f"Denied draft: {denial.get('draft')}\nReason: {denial.get('reason')}")


@st.fragment
def prompt_preview(db: Any, room_id: int) -> None:
    """The prompt an agent would be asked next (pick the agent). It is rebuilt from the whole
    log, so only while its expander is open (a long room's page does not read 10,000 events for
    a text nobody looked at)."""
    from conversation.rooms.room import Room

    room = Room.open(db, room_id)
    config = room.config
    who = st.selectbox("Preview the next prompt of", list(config.names), key=f"preview-{room_id}")
    st.caption("Prompt template: " + ("the room's own" if config.prompt_template else "default"))
    if room.status in (RoomStatus.TERMINATED, RoomStatus.STOPPED):
        st.caption("The room has ended: this is what the agent would be asked if it went on.")
    box = st.expander(
        escape_markdown(f"{who}'s next prompt"), key=f"preview-open-{room_id}", on_change="rerun"
    )
    with box:
        if not box.open:
            return
        # The view leaves open turns out (a running turn's own prompt is not yet history).
        shown = rooms.preview_prompt(config, room.events(), who)
        # Both prompts: for a real chat model the instructions are in the system prompt and
        # the user prompt is the conversation, sent as chat turns (docs/models.md, "Prompt
        # shape").
        st.caption("System prompt")
        st.code(shown.system_prompt, language=None, wrap_lines=True)
        st.caption("User prompt")
        st.code(shown.user_prompt, language=None, wrap_lines=True)


__all__ = ["hand_details", "prompt_preview", "turn_details_panel"]
