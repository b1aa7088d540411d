"""How a log entry is shown to people: a value (``Shown``) the live view, Results' transcript
and any other page draw without deciding what the entry means.

Each turn kind's handler says how its turns are shown (``TurnHandler.show``, and
``show_notice`` for a notice that records its kind, such as a coordinator's pick); this module
holds the value and what every kind shares: a person's message, a room's notice and a speaking
turn's bubble, pass and skipped turn. Plain text only: names and what people or models wrote are
``texts``, kept apart from the words around them (``line``), so a page escapes exactly them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from conversation.vocabulary import HumanMessage, LogEntry, Notice, Pass, TurnEntry, TurnState


class Form(StrEnum):
    """How an entry is drawn."""

    MESSAGE = "message"
    """A chat bubble: the speaker, a caption (``line`` after the speaker's name), the body."""
    NOTE = "note"
    """One line (``line``), e.g. "Ana passed (#4)."."""
    FOLDED = "folded"
    """A closed box titled ``line`` that holds ``body`` (e.g. a context summary)."""


@dataclass(frozen=True, slots=True)
class Shown:
    """One entry as people see it (see the module doc). ``line`` is a template whose ``{}``
    stand for ``texts`` in order; ``behind``: ``(title, text)`` pairs one click away (a skipped
    turn's unpublished draft); ``icon``: a notice's Material icon name; ``provenance``: its
    provenance notes go with it."""

    form: Form
    line: str
    texts: tuple[str, ...] = ()
    body: str = ""
    behind: tuple[tuple[str, str], ...] = ()
    icon: str | None = None
    provenance: bool = True

    def line_with(self, escape: Callable[[str], str]) -> str:
        """``line`` with each of ``texts`` passed through ``escape`` (a page's Markdown
        escaping), and nothing else touched."""
        return self.line.format(*(escape(t) for t in self.texts))

    @property
    def text(self) -> str:
        """The line as plain text (for a transcript, an export or a test)."""
        return self.line.format(*self.texts)


#: What a turn's caption adds for its state (a finished turn adds nothing).
STATE_NOTES: Final[dict[TurnState, str]] = {
    TurnState.RUNNING: " · answering…",
    TurnState.WAITING: " · draft, waiting for approval",
    TurnState.INTERRUPTED: " · interrupted",
    TurnState.FAILED: " · failed",
    TurnState.STOPPED: " · stopped",
    TurnState.ABANDONED: " · abandoned",
}


def state_note(entry: LogEntry) -> str:
    """What a turn's caption says of its state ("" for a finished turn, or no turn)."""
    return "" if entry.state is None else STATE_NOTES.get(entry.state, "")


def human_shown(message: HumanMessage) -> Shown:
    return Shown(Form.MESSAGE, f" · person · #{message.seq}", body=message.content)


def notice_shown(notice: Notice) -> Shown:
    """A notice from the room: one line with an info icon."""
    return Shown(Form.NOTE, "{}", (notice.content,), icon="info")


def speaking_shown(turn: TurnEntry) -> Shown:
    """A speaking turn: a pass, a turn a person skipped or abandoned (it counts as a pass and
    published nothing, so it is one line, not an empty bubble), or the agent's bubble."""
    if isinstance(turn, Pass):
        reason = turn.data.get("pass_reason")  # the engine decided it (a copy, an echo)
        why = (("Why a pass", str(reason)),) if reason else ()
        return Shown(Form.NOTE, f"{{}} passed (#{turn.seq}).", (turn.speaker,), behind=why)
    if turn.stopped or turn.state is TurnState.ABANDONED:
        how = "skipped" if turn.stopped else "abandoned"
        draft = (("Its unpublished draft", turn.content),) if turn.content else ()
        line = f"{{}}'s turn was {how} (#{turn.seq}); it counts as a pass."
        return Shown(Form.NOTE, line, (turn.speaker,), behind=draft)
    if turn.is_running:
        body = "…"
    elif turn.failed:
        error = turn.row.error or {}
        body = f"[failed] {error.get('message') or 'the model call failed'}"
    else:
        body = turn.content
    return Shown(Form.MESSAGE, f" · #{turn.seq}{state_note(turn)}{copy_note(turn)}", body=body)


def copy_note(entry: LogEntry) -> str:
    """What a message's caption says when it nearly copies a recent message
    (``data["near_copy"]``, ``text.copies``): "" otherwise."""
    near = entry.data.get("near_copy")
    if not isinstance(near, Mapping) or "seq" not in near:
        return ""
    return f" · nearly copies #{near['seq']}"


__all__ = [
    "STATE_NOTES",
    "copy_note",
    "Form",
    "Shown",
    "human_shown",
    "notice_shown",
    "speaking_shown",
    "state_note",
]
