"""The participant's chat: what their seat may see, growing through a fragment.

What a seat sees comes from ``conversation.study.participant_view`` (public messages, private ones
addressed to the seat, their own; agents' messages only once committed, a moderated draft only
once approved; "... is typing" while an agent drafts). Here it is drawn: bodies and names as plain
text, the person's own messages marked "(you)".

How it grows: the page draws the chat box once; a fragment (``run_every``) sends the heartbeat,
asks whether the view it drew is still current (one small read) and reads it again only when it
is not, then draws the messages, so a new message appears without a whole-page rerun. When the
participant's stage changes (the room ended, they were removed) the fragment reruns the page,
which then draws the next stage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import streamlit as st

from conversation.vocabulary import EventKind
from settings import SETTINGS
from ui.participant.outage import guarded
from ui.widgets import AGENT_AVATARS, HUMAN_AVATAR, SYSTEM_AVATAR, escape_markdown

#: How often the participant's page asks for news (and, at the study's heartbeat period, says
#: "still here").
POLL_SECONDS = SETTINGS.participant_poll_seconds
VIEW_KEY = "_participant_view"


def typing_line(names: Sequence[str]) -> str:
    """``Seller is typing…`` (or several names)."""
    names = list(names)
    if not names:
        return ""
    if len(names) == 1:
        return f"{names[0]} is typing…"
    return ", ".join(names[:-1]) + f" and {names[-1]} are typing…"


def time_left_line(seconds: float | None) -> str:
    if seconds is None:
        return ""
    left = max(0, int(seconds))
    return f"Time left: {left // 60}:{left % 60:02d}"


def _icon(message: Any, speakers: list[str]) -> str:
    if message.kind == EventKind.HUMAN:
        return HUMAN_AVATAR
    if message.kind == EventKind.SYSTEM:
        return SYSTEM_AVATAR
    if message.speaker not in speakers:
        speakers.append(message.speaker)
    return AGENT_AVATARS[speakers.index(message.speaker) % len(AGENT_AVATARS)]


def draw_messages(view: Any) -> None:
    """The seat's messages as chat bubbles (bodies as plain text) and the typing line."""
    messages = list(view.messages or [])
    if not messages:
        st.caption("No messages yet. Say hello when you are ready.")
    speakers: list[str] = []
    for message in messages:
        if message.kind == EventKind.SYSTEM:
            st.caption(escape_markdown(message.content))
            continue
        with st.chat_message(
            "user" if message.own else "assistant", avatar=_icon(message, speakers)
        ):
            st.caption(
                f"**{escape_markdown(message.speaker)}**"
                + (" (you)" if message.own else "")
                + (" · private" if message.private else "")
            )
            st.text(message.content)
    typing = typing_line(view.typing or [])
    # Always drawn (empty or not) so the chat does not jump when someone starts typing.
    st.caption(escape_markdown(typing) if typing else "\u00a0")


def live_chat(view: Any, refreshed: Callable[[Any], Any], *, stage: str) -> None:
    """The room stage's live part (time left, notices, the researcher's messages, the chat),
    re-drawn every ``POLL_SECONDS`` by a fragment from ``refreshed(view)``: the view shown
    before when nothing it shows changed (one small read, ``conversation.study
    .view_is_current``), else the view read again. When its stage is no longer ``stage`` the
    whole page reruns. (The fragment read the whole view every second: at 24 participants that
    was a fifth of the app server's CPU, benchmarks/participants_load.py.)
    """
    st.session_state[VIEW_KEY] = view  # the page's own read is the newest

    def chat() -> None:
        before = st.session_state.get(VIEW_KEY, view)
        fresh = guarded(lambda: refreshed(before))
        shown = before if fresh is None else fresh  # the database is out of reach: said above
        st.session_state[VIEW_KEY] = shown
        if shown.stage != stage:
            st.rerun(scope="app")
        line = time_left_line(shown.time_left_at(datetime.now(UTC)))
        if line:
            st.caption(escape_markdown(line))
        if shown.notice:
            st.info(escape_markdown(shown.notice), icon=":material/info:")
        for item in list(shown.help or []):
            if item.from_researcher:
                st.warning(
                    "Message from the researcher: " + escape_markdown(item.text),
                    icon=":material/support_agent:",
                )
        draw_messages(shown)

    st.fragment(chat, run_every=POLL_SECONDS)()


__all__ = ["POLL_SECONDS", "draw_messages", "live_chat", "time_left_line", "typing_line"]
