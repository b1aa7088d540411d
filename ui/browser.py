"""What the app asks of the browser itself: a cookie that remembers the person's name, and a page
opened at its top.

- **The name** ("Your name in rooms") is what a person's messages, approvals, edits and denials
  are recorded under. A Streamlit session forgets it on a reload, a deep link, a new tab and a
  restart of the server, and the name went back to ``user`` each time, so moderators' acts were
  recorded as "user". It is kept in a first-party cookie (``rooms_name``, a year, this site
  only): ``remembered_name()`` reads it from the request that opened the session
  (``st.context.cookies``, so the very first run of a page already has it), ``remember_name``
  writes it from the page when it changes. The cookie holds what the person typed in the field
  and nothing else; a value that is not a valid name is ignored.
- **The top of a page**: after *Create room* (or *Create and run*), the new page opened at the
  form's scroll position, its title and controls cut off. ``scroll_to_top(token)`` scrolls the
  page's main area to the top once per token.

Both are ``st.components.v2`` components with static JavaScript: every value reaches the script
as data (JSON), never as code or HTML.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import streamlit as st

#: The cookie's name, and how long it lasts (seconds).
NAME_COOKIE = "rooms_name"
NAME_COOKIE_SECONDS = 365 * 24 * 3600

_NAME_JS = f"""
export default function (component) {{
    const name = component.data && component.data.name;
    if (typeof name !== "string") return;
    const value = encodeURIComponent(name);
    if (document.cookie.split("; ").includes("{NAME_COOKIE}=" + value)) return;
    document.cookie = "{NAME_COOKIE}=" + value +
        "; path=/; max-age={NAME_COOKIE_SECONDS}; SameSite=Strict";
}}
"""

_TOP_JS = """
export default function (component) {
    const main = document.querySelector('[data-testid="stMain"]')
        || document.querySelector("section.main");
    if (main) main.scrollTo({ top: 0 });
    window.scrollTo({ top: 0 });
}
"""

_components: dict[str, Any] = {}


def _component(name: str, js: str) -> Any:
    """The component ``name`` (registered once per process)."""
    found = _components.get(name)
    if found is None:
        found = _components[name] = st.components.v2.component(name, js=js)
    return found


def remembered_name() -> str | None:
    """The name this browser's cookie remembers, when it is a valid name; else None."""
    from conversation.access.roles import check_identity
    from conversation.exceptions import ConversationValueError

    try:
        raw = st.context.cookies.get(NAME_COOKIE)
    except Exception:  # noqa: BLE001 - no browser request (a test, a script): nothing remembered
        return None
    if not raw:
        return None
    try:
        name = check_identity(unquote(str(raw)).strip(), "name")
    except ConversationValueError:
        return None
    return name if len(name) <= 64 else None


def remember_name(name: str) -> None:
    """Keep ``name`` in this browser's cookie (written by the page; nothing is drawn)."""
    _component("rooms_remember_name", _NAME_JS)(data={"name": name}, key="remember-name", height=0)


def scroll_to_top(token: str) -> None:
    """Open the page at its top: once for each new ``token`` (say, the new room's id)."""
    _component("rooms_scroll_to_top", _TOP_JS)(key=f"scroll-top-{token}", height=0)


_AT_TOP = "_open_at_top"


def open_at_top(token: str) -> None:
    """Ask that the next run of the page (after ``st.rerun()``: a new room, a new experiment)
    open at its top (``scrolled_if_asked``, called in every page's set-up)."""
    st.session_state[_AT_TOP] = token


def scrolled_if_asked() -> None:
    """Scroll to the top when the run before asked for it (``open_at_top``)."""
    token = st.session_state.pop(_AT_TOP, None)
    if token is not None:
        scroll_to_top(str(token))


__all__ = [
    "NAME_COOKIE",
    "NAME_COOKIE_SECONDS",
    "open_at_top",
    "remember_name",
    "remembered_name",
    "scroll_to_top",
    "scrolled_if_asked",
]
