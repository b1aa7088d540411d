"""How the monitor's controls act: the act goes through ``conversation.study`` (which checks
the actor and records it); done, the page is redrawn and says so above the controls; refused
(a bad field, a role, a person who moved on), the reason is shown where the form is and the
form keeps what was typed (nothing is lost, nothing half done).

Every text passes through :func:`ui.widgets.escape_markdown`: a refusal may quote what a
researcher typed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from ui.widgets import escape_markdown

NOTICE_KEY = "_monitor_notice"
DONE_KEY = "_monitor_done"


def act(action: Callable[[], Any], done: Callable[[Any], str] | str | None = None) -> Any:
    """Run ``action``; on success store ``done`` (a text, or a function of the result) and
    rerun the page; on ``ValueError``/``PermissionError`` show the reason here and return None
    (no rerun: the form's fields keep their values)."""
    try:
        result = action()
    except (ValueError, PermissionError) as exc:
        st.error("Not done: " + escape_markdown(exc))
        return None
    if done is not None:
        st.session_state[DONE_KEY] = done(result) if callable(done) else done
    st.rerun()
    return result  # pragma: no cover - st.rerun() does not return


def refuse(reason: str) -> None:
    """A control's own refusal (an unticked confirmation, an empty field): shown, nothing done."""
    st.error(escape_markdown(reason))


def show_notices() -> None:
    """What the last act did (or why an act from a fragment was refused), once, at the top."""
    notice = st.session_state.pop(NOTICE_KEY, None)
    if notice:
        st.warning(escape_markdown(notice))
    done = st.session_state.pop(DONE_KEY, None)
    if done:
        st.success(escape_markdown(done))


__all__ = ["DONE_KEY", "NOTICE_KEY", "act", "refuse", "show_notices"]
