"""The Room page's moderation panel: a drafted message that waits for a person, with its edit box,
Approve and Deny, and who the person acts as.

What a moderator typed is never lost, and never said to be lost when it was not:

- a draft decided by this person (approved, edited and approved, denied) simply goes: its edit
  was applied, or the denial recorded;
- a draft decided by someone else while this person was editing it (another moderator, in
  another tab or browser) stays on the page as it was, with who decided it and how: its edit box
  is drawn again in the same place under the same key, so the browser keeps even an edit still
  being typed (focused, not yet sent to the server by Tab or a click), and a committed edit is
  there too. The box stays until the person dismisses it.

Approve and Deny say whom the act is recorded under ("Acting as ann": the signed-in address
with sign-in on, else the name in the sidebar).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from conversation.exceptions import ConversationStateError, PermissionDenied, TurnAlreadyDecided
from conversation.rooms.turn import DraftChanged

from ..bootstrap import wake_runner
from ..widgets import escape_markdown
from .live import forget
from .provenance import already_decided, last_decision

# A moderator reading the newest message approves or denies without reaching for the mouse
# (Alt: a plain letter would fire while typing an edit or a reason).
APPROVE_KEYS, DENY_KEYS = "Alt+A", "Alt+D"
EDIT_LABEL = "Message (edit before approving if you like)"


def _state(room_id: int) -> tuple[dict[str, str], set[str], dict[str, str]]:
    """This page's record of the drafts the person saw (key -> draft), those they decided
    themselves, and those decided elsewhere while shown (key -> draft)."""
    shown = st.session_state.setdefault(f"_shown-drafts:{room_id}", {})
    mine = st.session_state.setdefault(f"_decided-here:{room_id}", set())
    gone = st.session_state.setdefault(f"_gone-drafts:{room_id}", {})
    return shown, mine, gone


def moderate(
    room: Any, me: Any, verb: str, turn_id: int, draft: str, keys: str, version: str
) -> None:
    """``on_click`` of Approve and Deny, bound to the draft the person saw (its turn): it runs
    even when that draft is gone from the page (another moderator decided it meanwhile), so the
    engine's refusal reaches the person instead of the click being dropped."""
    room_id = room.id
    _, mine, _ = _state(room_id)
    turn = room.turn(turn_id)
    edited = str(st.session_state.get(f"draft-{keys}", draft))
    try:
        if verb == "approve":
            edit = edited if edited.strip() != draft.strip() else None
            turn.approve(edit, actor=me, seen=version)
        else:
            reason = str(st.session_state.get(f"deny-reason-{keys}", "")).strip()
            if not reason:
                return  # the page says why under the button
            turn.deny(reason, actor=me, seen=version)
        mine.add(keys)  # decided here: the edit was applied, nothing to keep
    except DraftChanged:
        # Bound to the draft the person read: another moderator's decision replaced it.
        st.session_state[f"_notice:{room_id}"] = "The draft changed; read it again."
    except TurnAlreadyDecided:
        st.session_state[f"_notice:{room_id}"] = already_decided(room.turn(turn_id).event)
    except (ConversationStateError, PermissionDenied, ValueError) as exc:
        st.session_state[f"_notice:{room_id}"] = str(exc)
    forget(room_id)
    wake_runner()


def draft_panel(room: Any, me: Any, pending: Any) -> None:
    """The drafts decided elsewhere while shown (kept), then the draft that waits now (see the
    module docstring)."""
    shown, mine, gone = _state(room.id)
    drawn = (
        f"{pending.id}-{len(pending.inputs['denials'])}"
        if pending is not None and pending.entry.is_draft
        else None
    )
    for key, draft in list(shown.items()):
        if key == drawn:
            continue
        del shown[key]
        if key in mine:
            mine.discard(key)
            st.session_state.pop(f"draft-{key}", None)
        else:
            gone[key] = draft
    for key, draft in list(gone.items()):
        _decided_elsewhere(room, key, draft)
    if drawn is not None:
        _waiting(room, me, pending, drawn)


def _decided_elsewhere(room: Any, key: str, draft: str) -> None:
    """A draft someone else decided while this person had it open: the same edit box, under the
    same key (the browser keeps what is being typed in it), and who decided it."""
    turn_id = int(key.split("-", 1)[0])
    try:
        event = room.turn(turn_id).event
        decided = last_decision(event) or "decided by someone else"
        speaker = event.speaker
    except (ConversationStateError, LookupError):
        decided, speaker = "decided by someone else", "an agent"
    with st.container(border=True):
        st.markdown(  # markup-ok: the speaker and the decision are escaped
            f"**Draft by {escape_markdown(speaker)}**: {escape_markdown(decided)}"
        )
        st.text_area(EDIT_LABEL, value=draft, key=f"draft-{key}")
        st.caption("Your edit was not applied: copy what you need, then dismiss it.")
        if st.button("Dismiss", key=f"dismiss-{key}"):
            _, _, gone = _state(room.id)
            gone.pop(key, None)
            st.session_state.pop(f"draft-{key}", None)
            st.rerun()


def _waiting(room: Any, me: Any, pending: Any, key: str) -> None:
    shown, _, _ = _state(room.id)
    draft = pending.waiting[0]["draft"]
    shown[key] = draft
    version = pending.draft_version
    with st.container(border=True):
        st.markdown(f"**Draft by {escape_markdown(pending.speaker)}** waits for approval")
        st.text_area(EDIT_LABEL, value=draft, key=f"draft-{key}")
        st.caption(escape_markdown(f"Acting as {me.identity}"))
        st.button(
            "Approve",
            type="primary",
            key=f"approve-{key}",
            shortcut=APPROVE_KEYS,
            on_click=moderate,
            args=(room, me, "approve", pending.id, draft, key, version),
        )
        reason = st.text_input("Reason (the agent is told)", key=f"deny-reason-{key}")
        if (
            st.button(
                "Deny",
                key=f"deny-{key}",
                shortcut=DENY_KEYS,
                on_click=moderate,
                args=(room, me, "deny", pending.id, draft, key, version),
            )
            and not reason.strip()
        ):
            st.error("Say why: the agent is told the reason and tries again.")


__all__ = ["APPROVE_KEYS", "DENY_KEYS", "draft_panel", "moderate"]
