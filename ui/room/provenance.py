"""What the transcript says about how each event came to be: private recipients, who posted,
moderators' decisions (approve, edit, deny, pick, stop), why the speaker was chosen, cache hits,
a coordinator's pick, and the texts one click away (an edit's original draft, denied drafts,
candidates not chosen). Plain strings only: the caller shows them escaped or with ``st.text``.
No Streamlit here."""

from __future__ import annotations

from typing import Any

from conversation.vocabulary import HumanMessage, Notice, entry_of

_PAST = {
    "approve": "approved",
    "edit": "edited and approved",
    "deny": "denied",
    "pick": "picked",
    "stop": "skipped",
    "resume": "resumed",
    "abandon": "abandoned",
}


def _time(at: Any) -> str:
    """``2026-12-01T14:10:08+00:00`` -> ``14:10:08 UTC`` (the date is in the exports)."""
    text = str(at or "")
    return f"{text[11:19]} UTC" if len(text) >= 19 and text[10] == "T" else text


def marks(event: Any) -> list[str]:
    """Short provenance notes of one event (a stored row or its typed entry), in reading order
    (plain text, maybe empty)."""
    entry = entry_of(event)
    data = entry.data
    found: list[str] = []
    if entry.private_to:
        found.append("private to " + ", ".join(entry.private_to))
    by = data.get("by")
    if isinstance(entry, HumanMessage) and by and by != entry.speaker:
        found.append(f"posted by {by}")
    if isinstance(entry, Notice) and by and f"by {by}" not in entry.content:
        found.append(f"by {by}")  # (a notice such as "Resumed by ann." names them already)
    if data.get("chosen_because"):
        found.append(f"why {entry.speaker}: {data['chosen_because']}")
    if data.get("candidates") and data.get("picked"):
        who = data.get("picked_by")
        found.append(f"draft picked by {who}" if who else "draft picked")
    if data.get("cache_hit"):
        found.append("from the model cache")
    for decision in entry.decisions:
        verb = _PAST.get(str(decision.get("verb")), str(decision.get("verb")))
        found.append(f"{verb} by {decision.get('by')} at {_time(decision.get('at'))}")
    return found


def already_decided(event: Any) -> str:
    """What a moderator is told when another one decided this draft first (the engine refused
    the click with ``TurnAlreadyDecided``): who, what and when, from the turn's decisions."""
    decisions = entry_of(event).decisions
    if not decisions:
        return f"{event.speaker}'s draft was already decided by someone else; nothing changed."
    last = decisions[-1]
    verb = _PAST.get(str(last.get("verb")), str(last.get("verb")))
    at = _time(last.get("at"))
    when = f" at {at[:5]} UTC" if at.endswith(" UTC") else (f" at {at}" if at else "")
    return (
        f"{event.speaker}'s draft was already {verb} by {last.get('by')}{when}; "
        "your click changed nothing."
    )


def one_click_texts(event: Any) -> list[tuple[str, list[str]]]:
    """``(title, texts)`` for what sits behind one click: the original draft of an edit, each
    denied draft with its reason, and the candidates a coordinator did not choose."""
    entry = entry_of(event)
    data = entry.data
    found: list[tuple[str, list[str]]] = []
    if data.get("edited") and data.get("draft") is not None:
        who = data.get("edited_by")
        title = f"Original draft (edited by {who})" if who else "Original draft (before the edit)"
        found.append((title, [str(data["draft"])]))
    if isinstance(data.get("raw_reply"), str):  # what the model sent, before stripping
        found.append(
            ("The model's raw reply (before copied instructions and made-up turns were removed)",
             [data["raw_reply"]])
        )  # fmt: skip
    denials = entry.denials
    if denials:
        texts = [
            f"Draft: {d.get('draft', '')}\nDenied by {d.get('by', '?')}: {d.get('reason', '')}"
            for d in denials
        ]
        found.append((f"Denied drafts ({len(denials)})", texts))
    others = [c for c in entry.candidates if not c.get("chosen") and not c.get("passed")]
    if others:
        # Until someone picks (a person coordinates), every draft is still a candidate.
        undecided = entry.is_draft
        title = "Drafts to pick from" if undecided else "Drafts not chosen"
        found.append(
            (
                f"{title} ({len(others)})",
                [f"{c.get('speaker')}: {c.get('text', '')}" for c in others],
            )
        )
    return found


__all__ = ["already_decided", "marks", "one_click_texts"]
