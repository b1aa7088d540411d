"""The participant's chat: what their seat may see, growing through a fragment.

What a seat sees comes from ``conversation.study.participant_view`` (public messages, private ones
addressed to the seat, their own; agents' messages only once committed, a moderated draft only
once approved; "... is typing" while an agent drafts). Here it is drawn: bodies and names as plain
text, the person's own messages marked "(you)".

How it grows: the page draws the chat box once; a fragment (``run_every``) asks for the view again,
sends the heartbeat and draws the messages, so a new message appears without a whole-page rerun.
When the participant's stage changes (the room ended, they were removed) the fragment reruns the
page, which then draws the next stage.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from ui.widgets import AGENT_AVATARS, HUMAN_AVATAR, SYSTEM_AVATAR, escape_markdown

#: How often the participant's page asks for news (and, at the study's heartbeat period, says
#: "still here").
POLL_SECONDS = float(os.environ.get("ROOMS_PARTICIPANT_POLL_SECONDS", "1.0"))


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
    if message.kind == "human":
        return HUMAN_AVATAR
    if message.kind == "system":
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
        if message.kind == "system":
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


def live_chat(poll: Callable[[], Any], *, stage: str) -> None:
    """The room stage's live part, re-drawn every ``POLL_SECONDS`` by a fragment.

    ``poll`` sends the heartbeat, runs the study's tick and returns the participant's current
    view; when its stage is no longer ``stage`` the whole page reruns.
    """

    def chat() -> None:
        view = poll()
        if view.stage != stage:
            st.rerun(scope="app")
        line = time_left_line(view.time_left)
        if line:
            st.caption(escape_markdown(line))
        if view.notice:
            st.info(escape_markdown(view.notice), icon=":material/info:")
        for item in list(view.help or []):
            if item.from_researcher:
                st.warning(
                    "Message from the researcher: " + escape_markdown(item.text),
                    icon=":material/support_agent:",
                )
        draw_messages(view)

    st.fragment(chat, run_every=POLL_SECONDS)()


__all__ = ["POLL_SECONDS", "draw_messages", "live_chat", "time_left_line", "typing_line"]
