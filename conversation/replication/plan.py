"""An analysis plan, declared once (``PlanIn``): the follow-up questions asked about every
room's transcript, the judges (models) that answer them, the statistics to report and the
exclusion rules. A study's definition holds one under ``[analysis]`` (frozen with it, so it is
preregistered); an experiment's package takes one from a file.

The statistics: ``rate`` (the share of rooms, or people, whose value is ``value``; default a
"yes") with its Wilson interval, and ``mean`` with its t interval, both by condition. A
measure is ``answer.<question>`` (per room: the judges' answers, the first judge's when there
are several), ``pre.<question>`` / ``post.<question>`` (per person: survey answers) or a
``SignalMeasure`` (per person). With two judges or more, each question's agreement between them
is Krippendorff's alpha with a bootstrap interval.

Exclusion rules name a ``SignalMeasure`` and a bound (``above`` or ``below``): a person whose
measure passes it is excluded; the analysis reports every statistic with and without
exclusions, and the counts by condition. A room is excluded when one of its people is.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, Strict, model_validator

from conversation.exceptions import ConversationValueError
from conversation.text.limits import MAX_CONDITION_CHARS
from conversation.text.schema import DoorModel, Problem, text_rule
from conversation.vocabulary import SignalMeasure

MAX_PLAN_QUESTIONS = 20
MAX_JUDGES = 5
MAX_STATISTICS = 50
MAX_EXCLUSIONS = 20
#: What a statistic's measure may start with.
MEASURE_SOURCES = ("answer", "pre", "post")


def _measure(value: str) -> str:
    if value in set(SignalMeasure):
        return value
    source, _, name = value.partition(".")
    if source not in MEASURE_SOURCES or not name:
        raise Problem(
            "must be 'answer.<question>', 'pre.<question>', 'post.<question>' or a signal "
            f"measure {sorted(SignalMeasure)}"
        )
    return value


class StatisticIn(DoorModel):
    """One statistic to report, by condition."""

    name: Annotated[str, text_rule(MAX_CONDITION_CHARS, one_line=True)]
    measure: Annotated[str, AfterValidator(_measure)]
    statistic: Literal["rate", "mean"]
    value: str | int | bool | None = None
    """``rate``: the value counted (default: a yes-like answer)."""


class ExclusionIn(DoorModel):
    """A preregistered exclusion rule: a person whose ``signal`` is above (or below) a bound."""

    name: Annotated[str, text_rule(MAX_CONDITION_CHARS, one_line=True)]
    signal: Annotated[SignalMeasure, Strict(False)]
    above: float | None = None
    below: float | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> ExclusionIn:
        if (self.above is None) == (self.below is None):
            raise ConversationValueError(
                f"analysis.exclusions {self.name!r}: give exactly one of 'above' or 'below'"
            )
        return self

    def excludes(self, measures: dict[str, Any]) -> bool:
        """Whether a person with these signal ``measures`` is excluded (a missing measure never
        excludes)."""
        value = measures.get(self.signal)
        if not isinstance(value, int | float) or isinstance(value, bool):
            return False
        return value > self.above if self.above is not None else value < float(self.below or 0)


def _question(value: dict[str, Any]) -> dict[str, Any]:
    from conversation.analysis.questions import question_from_spec

    question_from_spec(value)  # refused here, naming the field, when it would not build
    return value


def _judge(value: Any) -> Any:
    from conversation.models import resolve_model

    resolve_model(value)  # a known service, no key: refused now, not after the study
    return value


def _names_unique(value: list[Any]) -> list[Any]:
    names = [v["name"] if isinstance(v, dict) else v.name for v in value]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise Problem(f"names must be unique; {repeated} repeated")
    return value


class PlanIn(DoorModel):
    """An analysis plan (see the module doc)."""

    questions: Annotated[
        list[Annotated[dict[str, Any], AfterValidator(_question)]],
        Field(max_length=MAX_PLAN_QUESTIONS),
        AfterValidator(_names_unique),
    ] = []
    judges: Annotated[
        list[Annotated[Any, AfterValidator(_judge)]], Field(max_length=MAX_JUDGES)
    ] = []
    """Model specs (as a room's ``model``); none: the offline model alone."""
    statistics: Annotated[
        list[StatisticIn], Field(max_length=MAX_STATISTICS), AfterValidator(_names_unique)
    ] = []
    exclusions: Annotated[
        list[ExclusionIn], Field(max_length=MAX_EXCLUSIONS), AfterValidator(_names_unique)
    ] = []
    bootstrap: int = Field(default=1000, ge=0, le=20_000)
    """Bootstrap resamples of an agreement interval."""
    seed: int = Field(default=0, ge=0, lt=2**32)
    """The bootstrap's seed (the same plan gives the same intervals)."""

    @model_validator(mode="after")
    def _answers_are_asked(self) -> PlanIn:
        asked = {q["name"] for q in self.questions}
        for statistic in self.statistics:
            source, _, name = statistic.measure.partition(".")
            if source == "answer" and name not in asked:
                raise ConversationValueError(
                    f"analysis.statistics {statistic.name!r}: measure {statistic.measure!r} "
                    f"names no question of the plan {sorted(asked)}"
                )
        return self


def plan_place(loc: Any) -> str:
    """``("statistics", 0, "measure")`` -> ``analysis.statistics[0] measure``."""
    text = "analysis"
    for part in loc or ():
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


__all__ = [
    "MEASURE_SOURCES",
    "ExclusionIn",
    "PlanIn",
    "StatisticIn",
    "plan_place",
]
