"""The participant's chat: what their seat may see, growing through a fragment.

What a seat sees comes from ``conversation.study.participant_view`` (public messages, private ones
addressed to the seat, their own; agents' messages only once committed, a moderated draft only
once approved; "... is typing" while an agent drafts). Here it is drawn: bodies and names as plain
text, the person's own messages marked "(you)".

How it grows: the page draws the chat from the participant's view; a fragment (``run_every``)
sends the heartbeat and asks whether that view is still current (one small read), and reruns the
page when it is not: a new message, someone typing, the room ending, a stage change. Between
changes the fragment only redraws the time left.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
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


def live_chat(view: Any, still_current: Callable[[Any], bool]) -> None:
    """The room stage's live part: the room's time left, the notices, the researcher's
    messages and the chat, drawn from ``view`` by the page.

    A fragment asks ``still_current(view)`` every ``POLL_SECONDS`` (it also sends the heartbeat
    and runs the study's tick): one small read (``conversation.study.view_is_current``). Only
    when something the page shows changed does the whole page run again and read the view;
    meanwhile the fragment redraws the time left, the one line the clock changes. (The fragment
    used to read and redraw the whole chat every second: at 24 participants that was a fifth of
    the app server's CPU, benchmarks/participants_load.py.)
    """

    def watch() -> None:
        if not still_current(view):
            st.rerun(scope="app")
        line = time_left_line(view.time_left_at(datetime.now(UTC)))
        # Always one line (empty or not), so the chat below does not jump.
        st.caption(escape_markdown(line) if line else "\u00a0")

    st.fragment(watch, run_every=POLL_SECONDS)()
    if view.notice:
        st.info(escape_markdown(view.notice), icon=":material/info:")
    for item in list(view.help or []):
        if item.from_researcher:
            st.warning(
                "Message from the researcher: " + escape_markdown(item.text),
                icon=":material/support_agent:",
            )
    draw_messages(view)


__all__ = ["POLL_SECONDS", "draw_messages", "live_chat", "time_left_line", "typing_line"]
