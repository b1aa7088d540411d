"""The participant's chat box and help channel (the room stage of ``ui.participant.page``).

A post goes through ``conversation.study.post_as_participant``: the same size limit as the
researcher's posts (the box refuses a longer text and keeps it), the participant's rate limit
(``TooFast``: said, the text kept in the box), one message per drawn request id and text (a
double submit is one message; two different texts are two, even from two runs at once).
"""

from __future__ import annotations

import functools
from typing import Any

import streamlit as st

from ui.participant.outage import OUTAGE_TEXT, say_outage, unavailable
from ui.widgets import escape_markdown, limited_chat_input

CHAT_KEY = "participant-chat"
NOTICE_KEY = "_participant_notice"


def _request_id(slot: str, text: str) -> str:
    """The post's request id: the id this session drew for ``slot`` (kept until a post
    succeeds) and the text's hash. The same text sent twice (a double submit) is one message; a
    different text is another, even when two runs of this session post at once: Streamlit starts
    the run of a newer message while the run it interrupts is still writing the older one (it
    stops only at its next element), and both read the same drawn id (measured with
    benchmarks/participants_load.py: without the hash, the second was refused as a conflict and
    lost)."""
    import hashlib
    import uuid

    key = f"_participant_request:{slot}"
    if key not in st.session_state:
        st.session_state[key] = f"p-{uuid.uuid4().hex}"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return f"{st.session_state[key]}-{digest}"


def chat_box(db: Any, token: str, view: Any, *, wake: Any = None) -> None:
    """The box pinned to the bottom. A sent message is posted in the box's ``on_submit``
    (``_send``), before the page's script: a newer message arriving while this run draws cannot
    cut it short and lose the older one (seen with benchmarks/participants_load.py), and the
    chat drawn in the same run already shows it. A refused one is put back into the box with
    the reason."""
    from conversation.rooms.room import MAX_MESSAGE_CHARS

    with st.bottom:
        above = st.container()
        notice = st.session_state.pop(NOTICE_KEY, None)
        if notice:
            above.warning(escape_markdown(notice), icon=":material/schedule:")
        label = "Your message" + (" (it is your turn)" if view.your_turn else "")
        limited_chat_input(
            label,
            key=CHAT_KEY,
            limit=MAX_MESSAGE_CHARS,
            above=above,
            send=functools.partial(_send, db, token, wake),
        )


def _send(db: Any, token: str, wake: Any, message: str) -> None:
    """Post ``message`` (a chat box's ``on_submit``: session state only, no element drawn)."""
    from conversation import study

    try:
        study.post_as_participant(db, token, message, request_id=_request_id("post", message))
    except study.TooFast as slow:
        st.session_state[NOTICE_KEY] = (
            f"You are sending messages quickly: wait {max(1, round(slow.retry_after))} s and send "
            "it again."
        )
        st.session_state[f"_pending:{CHAT_KEY}"] = message
    except study.WrongStage:
        pass  # the room ended meanwhile: this run shows the next stage
    except unavailable():
        st.session_state[NOTICE_KEY] = f"Not sent yet. {OUTAGE_TEXT} Send it again in a moment."
        st.session_state[f"_pending:{CHAT_KEY}"] = message
    except ValueError as exc:
        st.session_state[NOTICE_KEY] = f"Not sent: {exc}"
        st.session_state[f"_pending:{CHAT_KEY}"] = message
    else:
        st.session_state.pop("_participant_request:post", None)
        if wake is not None:
            wake()  # the in-process runner looks for work now (the agents answer)


def help_panel(db: Any, token: str, view: Any) -> None:
    """A box to write to the researcher (their answers are drawn live by ``ui.participant.room``)."""
    from conversation import study

    with st.expander("Help: message the researcher"):
        st.caption("The researcher's answers appear above the chat.")
        with st.form("participant-help", clear_on_submit=True, border=False):
            text = st.text_input("Your message to the researcher", max_chars=2000)
            sent = st.form_submit_button("Send to the researcher")
        if sent and text.strip():
            try:
                study.message_researcher(db, token, text.strip())
            except study.TooFast as slow:
                st.warning(f"Please wait {max(1, round(slow.retry_after))} s and send it again.")
                return
            except unavailable():
                say_outage()
                return
            st.rerun()
