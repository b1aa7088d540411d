"""The shape of a study definition at the door, declared once (``StudyIn``).

A study is an experiment design (``experiments.design_schema``) whose conditions name their human
seats, plus the participant's path: consent, surveys, the lobby, the room's rules, dropouts and
the exit codes. A refusal is a ``ConversationValueError`` naming the field
(``experiment.conditions[0] seats``, ``exit.codes.completed``) and the fix.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, Strict, model_validator

from conversation.exceptions import ConversationValueError
from conversation.experiments.design_schema import MAX_REPLICATES, ConditionIn, TemplateIn
from conversation.replication.plan import PlanIn
from conversation.study.definition.checks import CheckFields, check_conditions
from conversation.study.definition.composition import CompositionIn, check_composition
from conversation.study.definition.instrument import SignalsIn, WithdrawalIn
from conversation.study.definition.payouts import PayoutsIn, check_payouts
from conversation.study.definition.rules import (
    AgentsIn,
    AttentionChecks,
    IdleIn,
    OnCheckFail,
    TurnDeal,
    check_room_limits,
    check_room_rules,
    condition_rules,
)
from conversation.text.limits import MAX_CONDITION_CHARS, MAX_MESSAGE_CHARS, MAX_NAME_CHARS
from conversation.text.schema import DoorModel, Loc, Problem, text_rule
from conversation.vocabulary import (
    CODE_OPTIONAL,
    EXIT_STATUSES,
    LEFT_PARTWAY,
    RULE_EXITS,
    ExitStatus,
)

DEFINITION_VERSION = 1


class OnLobbyTimeout(StrEnum):
    """What a lobby timeout does (``lobby.on_timeout``)."""

    AGENTS = "agents"
    """Form a group with the waiting person; the empty seats go to their stand-in agents."""
    HOME = "home"
    """Send the person home with the ``lobby_timeout`` code."""


class TurnOrder(StrEnum):
    """How the human seats speak (``room.turns``)."""

    FREE = "free"
    ORDERED = "ordered"


class OnTurnTimeout(StrEnum):
    """What an ordered seat's timed-out turn does (``room.on_turn_timeout``)."""

    SKIP = "skip"
    NUDGE = "nudge"
    AGENT = "agent"


class OnDropout(StrEnum):
    """What happens to a seat its person left (``participants.on_dropout``)."""

    PAUSE = "pause"
    CONTINUE = "continue"
    AGENT = "agent"
    END = "end"


# Fields holding one of an enum's words (the file spells them as strings).
_LobbyRule = Annotated[OnLobbyTimeout, Strict(False)]
_TurnOrderWord = Annotated[TurnOrder, Strict(False)]
_TurnRule = Annotated[OnTurnTimeout, Strict(False)]
_TurnDealWord = Annotated[TurnDeal, Strict(False)]
_DropoutRule = Annotated[OnDropout, Strict(False)]
SURVEY_TYPES = ("free_text", "multiple_choice", "linear_scale")
MAX_QUESTIONS = 50
MAX_OPTIONS = 30
MAX_CODE_CHARS = 64
MAX_URL_CHARS = 2_000
_QUESTION_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_CODE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _question_name(value: str) -> str:
    if not _QUESTION_NAME.fullmatch(value):
        raise Problem("must be 1-64 lowercase letters, digits and underscores, e.g. 'satisfaction'")
    if value.endswith(("_comment", "_generated_tokens")):  # EDSL's own columns
        raise Problem("must not end with '_comment' or '_generated_tokens' (EDSL's columns)")
    return value


def _option(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise Problem("must hold texts (multiple choice) or whole numbers (linear scale)")
    if isinstance(value, str) and not 0 < len(value) <= 200:
        raise Problem("must hold options of 1 to 200 characters")
    return value


class QuestionIn(CheckFields):
    """A survey question, as EDSL spells it (``free_text``, ``multiple_choice``,
    ``linear_scale``), with the study's additions (``checks.CheckFields``: a right answer, a
    condition for being asked)."""

    question_name: Annotated[str, AfterValidator(_question_name)]
    question_type: Literal["free_text", "multiple_choice", "linear_scale"]
    question_text: Annotated[str, text_rule(4_000)]
    question_options: list[Annotated[Any, AfterValidator(_option)]] | None = None
    option_labels: dict[str, str] | None = None

    @model_validator(mode="after")
    def _options_fit(self) -> QuestionIn:
        options = self.question_options
        if self.question_type == "free_text":
            if options is not None:
                raise Problem("question_options: a free_text question takes no options")
            return self
        if not options or not 2 <= len(options) <= MAX_OPTIONS or len(set(options)) < len(options):
            raise Problem(
                f"question_options: {self.question_type} needs 2 to {MAX_OPTIONS} distinct options"
            )
        wanted = int if self.question_type == "linear_scale" else str
        if not all(isinstance(o, wanted) for o in options):
            kind = "whole numbers" if wanted is int else "texts"
            raise Problem(f"question_options: {self.question_type} options must be {kind}")
        return self


def _questions(value: list[QuestionIn]) -> list[QuestionIn]:
    if len(value) > MAX_QUESTIONS:
        raise Problem(f"holds {len(value)} questions; at most {MAX_QUESTIONS}")
    names = [q.question_name for q in value]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise Problem(f"question names must be unique; {repeated} repeated")
    return value


def _seat_names(value: list[str]) -> list[str]:
    if not value:
        raise Problem("must name at least one human seat (a role of the template's agents)")
    if len(set(value)) < len(value):
        raise Problem("must not name a seat twice")
    return value


class StudyConditionIn(ConditionIn):
    """An experiment condition plus its human seats and what each seat's person is told."""

    seats: Annotated[list[str], AfterValidator(_seat_names)]
    instructions: dict[str, Annotated[str, text_rule(MAX_MESSAGE_CHARS)]] | None = None
    room: dict[str, Any] | None = None
    """This condition's room rules in place of the study's ``[room]`` fields (``rules``)."""
    composition: CompositionIn | None = None
    """Who may make up a group, from the pre-survey's answers (``composition``)."""


def _groups(value: int) -> int:
    if not 1 <= value <= MAX_REPLICATES:
        raise Problem(f"must be a whole number from 1 to {MAX_REPLICATES}, got {value}")
    return value


class StudyExperimentIn(DoorModel):
    """The design: a template room, conditions with human seats, groups per condition."""

    template: TemplateIn
    conditions: list[StudyConditionIn] = Field(min_length=1, max_length=100)
    groups: Annotated[int, AfterValidator(_groups)] = 1
    budget: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _seats_are_roles(self) -> StudyExperimentIn:
        roles = [a.name for a in self.template.agents]
        for i, condition in enumerate(self.conditions):
            unknown = [s for s in condition.seats if s not in roles]
            if unknown:
                raise ConversationValueError(
                    f"experiment.conditions[{i}] seats: {unknown} are not roles of the template "
                    f"{roles}; a human seat is one of the template's agents, played by a person"
                )
            if len(condition.seats) >= len(roles):
                raise ConversationValueError(
                    f"experiment.conditions[{i}] seats: every role is a person; leave at least "
                    "one agent in the room"
                )
            extra = sorted(set(condition.instructions or {}) - set(condition.seats))
            if extra:
                raise ConversationValueError(
                    f"experiment.conditions[{i}] instructions: {extra} are not human seats of "
                    f"this condition {condition.seats}"
                )
        return self


class LobbyIn(DoorModel):
    timeout_seconds: int = Field(default=300, ge=10, le=86_400)
    on_timeout: _LobbyRule = OnLobbyTimeout.HOME
    presence_seconds: int | None = Field(default=None, ge=2, le=3_600)
    """Only people seen (a heartbeat) this recently are matched; None: twice the heartbeat."""


class RoomRulesIn(DoorModel):
    """How the room runs for people: its time limit, turns, pacing, the opening's speaker."""

    time_limit_seconds: int = Field(default=900, ge=30, le=86_400)
    turns: _TurnOrderWord = TurnOrder.FREE
    turn_seconds: int = Field(default=120, ge=5, le=3_600)
    on_turn_timeout: _TurnRule = OnTurnTimeout.SKIP
    words_per_minute: (
        Annotated[int, Field(ge=0, le=2_000)] | dict[str, Annotated[int, Field(ge=0, le=2_000)]]
    ) = 0
    """0: off; a number: every agent's pace; ``{agent: wpm}``: per agent (others unpaced)."""
    show_drafts: bool = False
    """True: an unpaced agent's reply that streams is shown as it is written; False: "<name> is
    typing" until it is complete (what the participants read is then only committed text)."""
    host: Annotated[str, text_rule(MAX_NAME_CHARS, one_line=True)] = "Host"
    # The rules of issue 33 (``rules``): the room's time is from min_seconds to
    # time_limit_seconds; each person's messages from min_messages to max_messages.
    min_seconds: int = Field(default=0, ge=0, le=86_400)
    min_messages: int = Field(default=0, ge=0, le=1_000)
    max_messages: int | None = Field(default=None, ge=1, le=1_000)
    turn_order: _TurnDealWord = TurnDeal.FIXED
    idle: IdleIn | None = None
    agents: AgentsIn = AgentsIn()
    attention_checks: AttentionChecks = []

    @model_validator(mode="after")
    def _limits_fit(self) -> RoomRulesIn:
        check_room_limits(self)
        return self


class RateIn(DoorModel):
    messages: int = Field(default=5, ge=1, le=1_000)
    seconds: int = Field(default=20, ge=1, le=3_600)


class ParticipantsIn(DoorModel):
    cap: int | None = Field(default=None, ge=1, le=100_000)
    heartbeat_seconds: int = Field(default=10, ge=1, le=600)
    dropout_seconds: int = Field(default=60, ge=5, le=86_400)
    on_dropout: _DropoutRule = OnDropout.CONTINUE
    rate: RateIn = RateIn()

    @model_validator(mode="after")
    def _dropout_after_heartbeats(self) -> ParticipantsIn:
        if self.dropout_seconds < 2 * self.heartbeat_seconds:
            raise ConversationValueError(
                f"participants.dropout_seconds={self.dropout_seconds} must be at least twice "
                f"heartbeat_seconds ({self.heartbeat_seconds}): one late heartbeat is not a dropout"
            )
        return self


def _code(value: str) -> str:
    if not _CODE.fullmatch(value):
        raise Problem("must be 1-64 letters, digits, '-' or '_' (it is typed or put in a URL)")
    return value


class ExitIn(DoorModel):
    redirect: Annotated[str, text_rule(MAX_URL_CHARS, one_line=True, optional=True)] | None = None
    codes: dict[Annotated[ExitStatus, Strict(False)], Annotated[str, AfterValidator(_code)]]

    @model_validator(mode="after")
    def _every_status(self) -> ExitIn:
        # RULE_EXITS: checked with the rules (StudyIn)
        optional = LEFT_PARTWAY | RULE_EXITS | CODE_OPTIONAL
        missing = [str(s) for s in EXIT_STATUSES if s not in self.codes and s not in optional]
        if missing:
            raise ConversationValueError(
                f"exit.codes: a code is needed for every exit status; missing {missing}"
            )
        if self.redirect is not None and not self.redirect.startswith(("https://", "http://")):
            raise ConversationValueError(
                "exit.redirect must be an http(s) URL, e.g. "
                "'https://app.prolific.com/submissions/complete?cc={code}'"
            )
        return self

    def code(self, status: ExitStatus) -> str:
        """The completion code of ``status``: its own, or for a status a definition may leave
        out (``abandoned``, ``unfinished``: absence before or after the conversation) the
        ``dropped`` code; a withdrawal without a code of its own has none ("")."""
        if status in self.codes:
            return self.codes[status]
        if status in CODE_OPTIONAL:
            return ""
        return self.codes[ExitStatus.DROPPED]


def _version(value: int) -> int:
    if value != DEFINITION_VERSION:
        raise Problem(f"must be {DEFINITION_VERSION} (the only definition version), got {value}")
    return value


class StudyIn(DoorModel):
    """A whole study definition (docs/studies.md)."""

    version: Annotated[int, AfterValidator(_version)]
    name: Annotated[str, text_rule(MAX_CONDITION_CHARS, one_line=True)]
    consent: Annotated[str, text_rule(MAX_MESSAGE_CHARS)]
    seed: int | None = Field(default=None, ge=0, lt=2**63)
    experiment: StudyExperimentIn
    lobby: LobbyIn = LobbyIn()
    room: RoomRulesIn = RoomRulesIn()
    participants: ParticipantsIn = ParticipantsIn()
    exit: ExitIn
    pre_survey: Annotated[list[QuestionIn], AfterValidator(_questions)] = []
    post_survey: Annotated[list[QuestionIn], AfterValidator(_questions)] = []
    payouts: PayoutsIn | None = None

    @model_validator(mode="after")
    def _rules_fit(self) -> StudyIn:
        """What the rules of issue 33 need from the rest of the definition: each condition's
        room rules (merged and checked), compositions, survey conditions, payouts, and the
        ``failed_check`` code when anything can fail a check."""
        agents = [a.name for a in self.experiment.template.agents]
        for i, condition in enumerate(self.experiment.conditions):
            where = f"experiment.conditions[{i}].room"
            rules = condition_rules(self.room, condition.room, where)
            check_room_rules(rules, agents, condition.seats, where)
            if condition.composition is not None:
                check_composition(
                    condition.composition,
                    len(condition.seats),
                    self.pre_survey,
                    f"experiment.conditions[{i}].composition",
                )
        check_room_rules(self.room, agents, [], "room")
        check_conditions([("pre_survey", self.pre_survey), ("post_survey", self.post_survey)])
        if self.payouts is not None:
            seats = {s for c in self.experiment.conditions for s in c.seats}
            surveys = {"pre_survey": self.pre_survey, "post_survey": self.post_survey}
            check_payouts(self.payouts, seats, surveys)
        if self.has_checks and ExitStatus.FAILED_CHECK not in self.exit.codes:
            raise ConversationValueError(
                "exit.codes.failed_check: the study has checks a person can fail; give their "
                "code (Prolific pays failed attention checks apart)"
            )
        return self

    @property
    def has_checks(self) -> bool:
        """Whether a person can fail a check (a comprehension check, or an attention check
        that sends them home)."""
        questions = [*self.pre_survey, *self.post_survey]
        rooms = [self.room] + [
            condition_rules(self.room, c.room, "") for c in self.experiment.conditions
        ]
        return any(q.is_check for q in questions) or any(
            c.on_fail == OnCheckFail.EXIT for r in rooms for c in r.attention_checks
        )

    # The study as a research instrument (issue 34; definition/instrument.py).
    analysis: PlanIn = PlanIn()
    signals: SignalsIn = SignalsIn()
    withdrawal: WithdrawalIn = WithdrawalIn()

    @model_validator(mode="after")
    def _survey_measures_exist(self) -> StudyIn:
        asked = {
            "pre": {q.question_name for q in self.pre_survey},
            "post": {q.question_name for q in self.post_survey},
        }
        for statistic in self.analysis.statistics:
            source, _, name = statistic.measure.partition(".")
            if source in asked and name not in asked[source]:
                raise ConversationValueError(
                    f"analysis.statistics {statistic.name!r}: measure {statistic.measure!r} "
                    f"names no {source}-survey question {sorted(asked[source])}"
                )
        return self


def study_place(loc: Loc) -> str:
    """``("experiment", "conditions", 0, "seats")`` -> ``experiment.conditions[0] seats``."""
    if not loc:
        return "study definition"
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text and not text.endswith("]") else " " if text else "") + str(part)
    return text


__all__ = [
    "DEFINITION_VERSION",
    "OnDropout",
    "OnLobbyTimeout",
    "OnTurnTimeout",
    "TurnOrder",
    "EXIT_STATUSES",
    "SURVEY_TYPES",
    "QuestionIn",
    "StudyConditionIn",
    "StudyIn",
    "study_place",
]
