"""The room's rules for people, at the door (issue 33): time and message minimums and maximums,
how an ordered room's turns are dealt, the idle rules, what the agents may do, attention checks.

These are fields of the study's ``[room]`` section (``schema.RoomRulesIn``), and a condition may
override any of them (``[[experiment.conditions]] room = {...}``): :func:`condition_rules` merges
and checks the result, naming the condition's field. :func:`check_room_rules` checks what needs
the rest of the definition (an idle rule's agent is one of the room's agents).

What each rule does, and where: docs/studies.md, "Rules".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, Field, Strict, model_validator

from conversation.exceptions import ConversationValueError
from conversation.study.definition.checks import ChoiceCheckIn
from conversation.text.limits import MAX_NAME_CHARS
from conversation.text.schema import DoorModel, Problem, text_rule, validated

if TYPE_CHECKING:
    from conversation.study.definition.schema import RoomRulesIn

MAX_DAY = 86_400


class TurnDeal(StrEnum):
    """How an ordered room deals its human turns each cycle (``room.turn_order``)."""

    FIXED = "fixed"
    """The condition's seat order, every cycle."""
    DRAWN = "drawn"
    """An order drawn anew each cycle from a seed recorded in the study's log."""


class OnCheckFail(StrEnum):
    """What a failed attention check does (``on_fail``)."""

    RECORD = "record"
    """It is recorded (the monitor and the exports show it); the person stays."""
    EXIT = "exit"
    """The person leaves with the ``failed_check`` code (their seat by the dropout rule)."""


class IdleIn(DoorModel):
    """After ``wake_after_seconds`` with nobody speaking, ``wake_agent`` speaks; after
    ``end_after_seconds`` of silence the room ends. Either part may be left out."""

    wake_after_seconds: int | None = Field(default=None, ge=5, le=MAX_DAY)
    wake_agent: Annotated[str, text_rule(MAX_NAME_CHARS, one_line=True)] | None = None
    end_after_seconds: int | None = Field(default=None, ge=10, le=MAX_DAY)

    @model_validator(mode="after")
    def _parts_fit(self) -> IdleIn:
        wake, end = self.wake_after_seconds, self.end_after_seconds
        if wake is None and end is None:
            raise Problem("names wake_after_seconds, end_after_seconds or both")
        if (wake is None) != (self.wake_agent is None):
            raise Problem("wake_after_seconds and wake_agent go together (who speaks, and when)")
        if wake is not None and end is not None and end <= wake:
            raise Problem(
                f"end_after_seconds ({end}) must be later than wake_after_seconds ({wake}): "
                "the wake-up comes first"
            )
        return self


class AgentsIn(DoorModel):
    """What the room's agents may do when people are in the room."""

    hand_raising: Annotated[bool, Strict()] = False
    """Before it speaks an agent decides whether to (should_respond, a reason, ready_to_end);
    an agent that says no stays silent. One model call decides and drafts."""
    max_replies: int | None = Field(default=None, ge=0, le=10_000)
    """At most this many messages per agent in the room (None: no cap)."""
    one_per_message: Annotated[bool, Strict()] = False
    """One agent answers each person's message: the first that claims it."""
    end_when_ready: Annotated[bool, Strict()] = False
    """With hand raising: the room ends once every agent's latest decision says
    ready_to_end (and the people's minimums are met)."""

    @model_validator(mode="after")
    def _ready_needs_hands(self) -> AgentsIn:
        if self.end_when_ready and not self.hand_raising:
            raise Problem("end_when_ready needs hand_raising = true (ready_to_end is its answer)")
        return self

    def room_setting(self) -> dict[str, Any] | None:
        """The room config's ``agent_rules`` (``rooms.config.agent_rules``); None: no rule.
        An agent never answers its own message in a room with people."""
        rules: dict[str, Any] = {"no_self_reply": True}
        if self.hand_raising:
            rules["hand_raising"] = True
        if self.max_replies is not None:
            rules["max_replies"] = self.max_replies
        if self.one_per_message:
            rules["one_per_message"] = True
        return rules


class AttentionCheckIn(ChoiceCheckIn):
    """An attention check in the room: a popup with a question and choices, answered within
    ``answer_seconds``. Scheduled by the definition (``at_seconds`` after the room starts), or
    sent from the monitor (the same shape, without ``at_seconds``)."""

    at_seconds: int | None = Field(default=None, ge=0, le=MAX_DAY)
    answer_seconds: int = Field(default=30, ge=5, le=3_600)
    on_fail: Annotated[OnCheckFail, Strict(False)] = OnCheckFail.RECORD


def _checks(value: list[AttentionCheckIn]) -> list[AttentionCheckIn]:
    names = [c.name for c in value]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise Problem(f"check names must be unique; {repeated} repeated")
    return value


AttentionChecks = Annotated[list[AttentionCheckIn], AfterValidator(_checks)]


def check_room_limits(rules: RoomRulesIn) -> None:
    """The room section's own cross-field rules (minimums under maximums, checks in time);
    ``Problem`` naming the fields."""
    if rules.min_seconds >= rules.time_limit_seconds:
        raise Problem(
            f"min_seconds ({rules.min_seconds}) must be less than time_limit_seconds "
            f"({rules.time_limit_seconds}), the room's maximum"
        )
    if rules.max_messages is not None and rules.max_messages < max(1, rules.min_messages):
        raise Problem(
            f"max_messages ({rules.max_messages}) must be at least min_messages "
            f"({rules.min_messages}) and at least 1"
        )
    for check in rules.attention_checks:
        if check.at_seconds is None:
            raise Problem(
                f"attention_checks {check.name!r}: at_seconds is required (when it is shown, "
                "in seconds after the room starts); the monitor sends unscheduled ones"
            )
        if check.at_seconds + check.answer_seconds > rules.time_limit_seconds:
            raise Problem(
                f"attention_checks {check.name!r}: at_seconds + answer_seconds "
                f"({check.at_seconds + check.answer_seconds}) must fit in time_limit_seconds "
                f"({rules.time_limit_seconds})"
            )


def condition_rules(
    base: RoomRulesIn, override: Mapping[str, Any] | None, where: str
) -> RoomRulesIn:
    """The room rules of a condition: the study's ``[room]`` with the condition's ``room``
    fields in place of its own (each field whole), checked; errors name ``where`` (the
    condition's ``room``) and the field."""
    if not override:
        return base
    merged = {**base.model_dump(exclude_unset=True), **dict(override)}

    def place(loc: Sequence[Any]) -> str:
        inner = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
        return f"{where}{inner}"

    return validated(type(base), merged, place=place)


def check_room_rules(
    rules: RoomRulesIn, agents: Sequence[str], seats: Sequence[str], where: str
) -> None:
    """What the room's rules need from the rest of the definition: the idle rule's agent is an
    agent of the room (a template agent no person plays). ``ConversationValueError`` naming
    ``where``."""
    idle = rules.idle
    if idle is not None and idle.wake_agent is not None:
        playing = [a for a in agents if a not in seats]
        if idle.wake_agent not in playing:
            raise ConversationValueError(
                f"{where}.idle.wake_agent: {idle.wake_agent!r} is not an agent of the room "
                f"{playing}; the wake-up is an agent's turn"
            )


__all__ = [
    "AgentsIn",
    "AttentionCheckIn",
    "AttentionChecks",
    "IdleIn",
    "OnCheckFail",
    "TurnDeal",
    "check_room_limits",
    "check_room_rules",
    "condition_rules",
]
