"""The Room page's inspection panels: one turn's details, and the next prompt of an agent.

Each is a fragment, so picking a turn or an agent reruns the panel only, not the page (the
transcript, the controls and the other tabs stay as drawn). Both read the room afresh when they
run, and draw every name and message as plain text.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from . import rooms
from .widgets import follow_latest_selectbox


@st.fragment
def turn_details_panel(db: Any, room_id: int) -> None:
    """Pick a turn: its facts (model, tokens, cost, why it was chosen, ...), what it saw, the
    prompt it was asked, and any denied drafts."""
    from conversation.rooms.room import Room

    room = Room.open(db, room_id)
    events = room.events()
    turns = [e for e in events if e.kind in ("agent", "pass")]
    if not turns:
        st.caption("No agent turns yet.")
        return
    turn_by_seq = {e.seq: e for e in turns}
    seq = follow_latest_selectbox(
        "Turn",
        [e.seq for e in reversed(turns)],
        format_func=lambda s: f"#{s} {turn_by_seq[s].speaker}",
        key=f"turn-pick-{room_id}",
    )
    event = turn_by_seq[seq]
    details = rooms.turn_details(event)
    st.dataframe(
        pd.DataFrame({"": list(details), "value": [str(v) for v in details.values()]}),
        hide_index=True,
        width="stretch",
    )
    by_seq = {e.seq: e for e in events}
    st.caption("What the agent saw")
    for s in event.saw or []:
        seen = by_seq.get(s)
        if seen is not None:
            st.text(f"#{s} {seen.speaker}: {seen.content}")
    with st.expander("The prompt it was asked (rebuilt from the events before it)"):
        asked = rooms.turn_prompt(room.config, events, event)
        st.code(asked.system_prompt, language=None, wrap_lines=True)
        st.code(asked.user_prompt, language=None, wrap_lines=True)
    for denial in (event.data or {}).get("denials", []):
        st.text(f"Denied draft: {denial.get('draft')}\nReason: {denial.get('reason')}")


@st.fragment
def prompt_preview(db: Any, room_id: int) -> None:
    """The prompt an agent would be asked next (pick the agent)."""
    from conversation.rooms.room import Room

    room = Room.open(db, room_id)
    config = room.config
    who = st.selectbox("Preview the next prompt of", list(config.names), key=f"preview-{room_id}")
    shown = rooms.preview_prompt(
        config, [e for e in room.events() if e.state not in ("running",)], who
    )
    st.caption("Prompt template: " + ("the room's own" if config.prompt_template else "default"))
    if room.status in ("terminated", "stopped"):
        st.caption("The room has ended: this is what the agent would be asked if it went on.")
    # Both prompts: for a real chat model the instructions are in the system prompt and the
    # user prompt is the conversation, sent as chat turns (docs/models.md, "Prompt shape").
    st.caption("System prompt")
    st.code(shown.system_prompt, language=None, wrap_lines=True)
    st.caption("User prompt")
    st.code(shown.user_prompt, language=None, wrap_lines=True)


__all__ = ["prompt_preview", "turn_details_panel"]
