"""What the participant's page receives: a view as JSON, and what changed between two views as
the events of its stream (``view``, ``message``, ``typing``). Pure: no database, no clock.

- ``view``: everything the page shows but the chat's messages and the typing line (the stage,
  the consent or the questions with their conditions, the earlier answers those read and the
  explanations after a wrong try at a check, the lobby, the seat, the instructions, the room's
  rules for the person (``limits``: the turn banner, the box closed and why, the messages still
  needed or allowed), time left, the wait before they may leave, an attention check, notices,
  the researcher's messages, whether to record signals and the honeypot, the exit with its
  earnings). Sent when the stream opens and whenever any of it changed (a time left alone is
  not a change: the page counts it down).
- ``message``: one message the seat may see, once (the page keeps them by ``seq`` and ignores one
  it has: a reconnected stream sends them all again, a paced message may come after a newer one).
- ``typing``: the names of the agents writing now, when that list changed.

Texts are data, never markup: the page sets them with ``textContent``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conversation.text.limits import MAX_MESSAGE_CHARS
from conversation.vocabulary import ExitStatus

#: What the exit page says for each way of leaving (the code and the button follow).
EXIT_TEXTS: dict[str, str] = {
    ExitStatus.COMPLETED: "Thank you for taking part: the study is complete.",
    ExitStatus.DECLINED: "You chose not to take part. Thank you for your time.",
    ExitStatus.LOBBY_TIMEOUT: "We could not form a group in time. Thank you for waiting.",
    ExitStatus.DROPPED: "You were away for too long, so your conversation went on without you.",
    ExitStatus.REMOVED: "The researcher ended your participation.",
    ExitStatus.ERROR: "Something went wrong on our side. We are sorry.",
    ExitStatus.ABANDONED: "You were away for too long, so your place was given up.",
    ExitStatus.UNFINISHED: "You were away for too long to finish the last questions. Thank you.",
    ExitStatus.FAILED_CHECK: (
        "Your answers did not pass the study's checks, so your participation ends here. "
        "Thank you for your time."
    ),
    ExitStatus.WITHDRAWN: (
        "You have withdrawn from the study. Your messages and answers have been deleted. "
        "Thank you for your time."
    ),
}
#: Fields of the page's view that change with the clock alone (the page counts them down).
CLOCK_FIELDS = ("time_left", "lobby_seconds_left", "leave_in", "attention_seconds_left")


def message_json(message: Any) -> dict[str, Any]:
    """One message as the page receives it (``SeenMessage``)."""
    return {
        "seq": int(message.seq),
        "speaker": str(message.speaker),
        "content": str(message.content),
        "kind": str(message.kind),
        "own": bool(message.own),
        "private": bool(message.private),
        "at": message.at.isoformat() if message.at is not None else None,
    }


def view_json(view: Any) -> dict[str, Any]:
    """The page's part of a ``ParticipantView``: never the room's id, the person's token or a
    recruitment id; the messages and the typing line are sent apart (:func:`pushes`)."""
    exit_info = view.exit
    limits, attention = view.limits, view.attention
    as_of = view.as_of
    return {
        "stage": str(view.stage),
        "study_name": view.study_name,
        "consent": view.consent,
        "questions": list(view.questions or []),
        "earlier_answers": dict(view.earlier_answers or {}),
        "check_feedback": [
            {
                "question_name": f.question_name,
                "explanation": f.explanation,
                "attempts_left": int(f.attempts_left),
            }
            for f in view.check_feedback or []
        ],
        "waiting_for": view.waiting_for,
        "lobby_seconds_left": view.lobby_seconds_left,
        "seat": view.seat,
        "instructions": view.instructions,
        "your_turn": bool(view.your_turn),
        "max_message_chars": MAX_MESSAGE_CHARS,
        "time_left": view.time_left,
        "limits": _limits_json(limits),
        "leave_in": (limits.leave_in or None) if limits is not None else None,
        "attention": None
        if attention is None
        else {
            "check_id": int(attention.check_id),
            "question_text": attention.question_text,
            "question_options": list(attention.question_options),
        },
        "attention_seconds_left": None
        if attention is None or as_of is None
        else attention.seconds_left(as_of),
        "record_signals": bool(view.record_signals),
        "honeypot": view.honeypot,
        "notice": view.notice,
        "help": [
            {"from_researcher": bool(h.from_researcher), "text": h.text, "at": h.at.isoformat()}
            for h in view.help or []
        ],
        "exit": None
        if exit_info is None
        else {
            "status": exit_info.status,
            "code": exit_info.code,
            "redirect": exit_info.redirect,
            "text": EXIT_TEXTS.get(exit_info.status, "Thank you."),
            "earnings": earnings_json(exit_info.earnings),
        },
    }


def _limits_json(limits: Any) -> dict[str, Any] | None:
    """The room's rules for the person, but the wait before leaving (a clock field apart:
    ``leave_in``, counted down by the page)."""
    if limits is None:
        return None
    return {
        "messages_sent": int(limits.messages_sent),
        "messages_needed": int(limits.messages_needed),
        "messages_left": limits.messages_left,
        "closed_reason": limits.closed_reason,
        "turn_banner": limits.turn_banner,
    }


def earnings_json(earnings: Any) -> dict[str, Any] | None:
    """A person's earnings (``study.payouts.Earnings``) as the exit page receives them: amounts
    as text with two decimals (``"2.50"``, never a float), a line whose answer is still to come
    (an analysis run after the study) with ``"amount": null``; None when the study has no
    payouts."""
    if earnings is None:
        return None
    return {
        "currency": str(earnings.currency),
        "total": f"{earnings.total:.2f}",
        "lines": [
            {"label": str(label), "amount": None if amount is None else f"{amount:.2f}"}
            for label, amount in earnings.lines
        ],
    }


def _steady(page: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in page.items() if k not in CLOCK_FIELDS}


@dataclass(frozen=True, slots=True)
class Shown:
    """What a stream has sent so far: the view's page part, the messages' seqs, the typing
    line (compared by :func:`pushes` with the next view)."""

    page: dict[str, Any]
    seqs: frozenset[int]
    typing: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Push:
    """One event of the stream: its name and its JSON data."""

    event: str
    data: Any


def pushes(before: Shown | None, view: Any) -> tuple[list[Push], Shown]:
    """The events that bring a page showing ``before`` (None: nothing yet) to ``view``, and what
    it shows then. A stage change sends the whole view, then every message of the new stage."""
    page = view_json(view)
    messages = [message_json(m) for m in view.messages or []]
    typing = tuple(view.typing or [])
    out: list[Push] = []
    fresh = before is None or before.page.get("stage") != page["stage"]
    if fresh or _steady(before.page) != _steady(page):  # type: ignore[union-attr]
        out.append(Push("view", page))
    known = frozenset() if fresh else before.seqs  # type: ignore[union-attr]
    out += [Push("message", m) for m in messages if m["seq"] not in known]
    if fresh or before.typing != typing:  # type: ignore[union-attr]
        out.append(Push("typing", list(typing)))
    return out, Shown(page, frozenset(m["seq"] for m in messages), typing)


__all__ = [
    "CLOCK_FIELDS",
    "EXIT_TEXTS",
    "Push",
    "Shown",
    "earnings_json",
    "message_json",
    "pushes",
    "view_json",
]
