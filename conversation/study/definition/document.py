"""A study definition: one TOML or JSON file, validated whole at the door (``schema.StudyIn``).

:func:`load_definition` parses and checks a text, :func:`read_definition` a file. A checked
definition is a :class:`StudyDefinition`: the document as written (stored with the study) and its
validated model. :func:`group_room_config` builds the room config of one group: the template's
agents with the condition's traits, minus the seats people hold (a seat filled by an agent keeps
its template agent, the "stand-in").
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from conversation.exceptions import ConversationValueError
from conversation.experiments.design import Condition, check_design, room_agents
from conversation.study.definition.rules import condition_rules
from conversation.study.definition.schema import (
    RoomRulesIn,
    StudyConditionIn,
    StudyIn,
    study_place,
)
from conversation.text.limits import MAX_DESIGN_CHARS, check_json_value
from conversation.text.schema import door_errors, validated

#: The parts of a study condition that are not an experiment condition's.
_SEAT_FIELDS = ("seats", "instructions", "room", "composition")


@dataclass(frozen=True, slots=True)
class StudyDefinition:
    """A checked study definition: ``data`` (the document, JSON-able) and ``model`` (checked)."""

    data: Mapping[str, Any]
    model: StudyIn
    #: Each condition's merged room rules, made once (a definition is immutable).
    _rules: dict[str, RoomRulesIn] = field(default_factory=dict, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def version(self) -> int:
        return self.model.version

    @property
    def conditions(self) -> list[StudyConditionIn]:
        return list(self.model.experiment.conditions)

    def condition(self, label: str) -> StudyConditionIn:
        for condition in self.model.experiment.conditions:
            if condition.label == label:
                return condition
        raise ConversationValueError(f"condition {label!r} is not in the study's definition")

    def room_rules(self, label: str) -> RoomRulesIn:
        """The room rules of condition ``label``: the study's ``[room]`` with the condition's
        own ``room`` fields in their place."""
        found = self._rules.get(label)
        if found is None:
            condition = self.condition(label)
            where = f"condition {label!r} room"
            found = condition_rules(self.model.room, condition.room, where)
            self._rules[label] = found
        return found

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(self.data))  # type: ignore[no-any-return]

    def design(self) -> dict[str, Any]:
        """The experiment design the study's rooms belong to (``experiments.design``)."""
        experiment = self.data["experiment"]
        return {
            "version": 1,
            "template": dict(experiment["template"]),
            "conditions": [
                {k: v for k, v in c.items() if k not in _SEAT_FIELDS}
                for c in experiment["conditions"]
            ],
            "replicates": int(experiment.get("groups", 1)),
            "budget": experiment.get("budget"),
        }


def load_definition(text: str, *, fmt: str | None = None) -> StudyDefinition:
    """A study definition from TOML or JSON text (``fmt``: ``"toml"``, ``"json"``, or None to
    guess: JSON when it starts with ``{``), checked whole; ``ConversationValueError`` naming the
    first bad field and the fix."""
    return definition_from_dict(_parsed(text, fmt))


def _parsed(text: Any, fmt: str | None) -> Any:
    """The document a definition's text holds (size checked first), or the error naming why
    it does not parse."""
    if not isinstance(text, str):
        raise ConversationValueError("a study definition is text (TOML or JSON)")
    if len(text) > MAX_DESIGN_CHARS:
        raise ConversationValueError(
            f"the study definition holds {len(text)} characters; at most {MAX_DESIGN_CHARS}"
        )
    fmt = fmt or ("json" if text.lstrip().startswith("{") else "toml")
    try:
        return json.loads(text) if fmt == "json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConversationValueError(
            f"the study definition is not valid {fmt.upper()}: {exc}"
        ) from None


def definition_problems(text: str, *, fmt: str | None = None) -> list[str]:
    """Every problem of a study definition's text, one line per bad field (the study editor's
    *Validate*: [] when it is valid). A text that does not parse, or a definition whose fields
    are all well-formed but whose whole does not hold (a seat that is no role, a condition
    whose room does not build), is one line: its first problem."""
    try:
        data = _parsed(text, fmt)
    except ConversationValueError as exc:
        return [str(exc)]
    if isinstance(data, Mapping):
        try:
            StudyIn.model_validate(data)
        except ValidationError as exc:
            return [str(e) for e in door_errors(exc, place=study_place)]
    try:
        definition_from_dict(data)
    except ConversationValueError as exc:
        return [str(exc)]
    return []


def read_definition(path: str | Path) -> StudyDefinition:
    """A study definition from a ``.toml`` or ``.json`` file (see :func:`load_definition`)."""
    path = Path(path)
    fmt = "json" if path.suffix.lower() == ".json" else "toml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConversationValueError(
            f"cannot read the study definition {str(path)!r}: {exc.strerror}"
        ) from None
    return load_definition(text, fmt=fmt)


def definition_from_dict(data: Any) -> StudyDefinition:
    """A checked definition from a parsed document (a stored study's, say)."""
    if not isinstance(data, Mapping):
        raise ConversationValueError("a study definition must be an object (a TOML document)")
    check_json_value(dict(data), "study definition", max_chars=MAX_DESIGN_CHARS)
    model = validated(StudyIn, data, place=study_place)
    definition = StudyDefinition(data=dict(data), model=model)
    check_design(definition.design())
    for condition in definition.conditions:  # every room a group could get builds
        group_room_config(definition, condition.label, filled=())
        group_room_config(definition, condition.label, filled=condition.seats)
    return definition


def group_room_config(
    definition: StudyDefinition,
    label: str,
    *,
    filled: Sequence[str],
    seed: int | None = None,
) -> dict[str, Any]:
    """The room config (``RoomConfig.to_dict``) of a group of condition ``label`` whose human
    seats ``filled`` are held by their stand-in agents; ``ConversationValueError`` naming the
    condition when a part does not build."""
    from conversation.rooms.config import RoomConfig, request_settings

    template = definition.data["experiment"]["template"]
    study_condition = definition.condition(label)
    condition = Condition.from_dict(
        {k: v for k, v in study_condition.model_dump().items() if k not in _SEAT_FIELDS}
    )
    people = set(study_condition.seats) - set(filled)
    agents = [a for a in room_agents(template, condition) if a["name"] not in people]
    try:
        config = RoomConfig.build(
            agents=agents,
            planner=condition.planner or template.get("planner"),
            termination=condition.termination or template.get("termination"),
            model=condition.model or template.get("model"),
            moderated=bool(template.get("moderated")),
            prompt_template=condition.prompt_template or template.get("prompt_template"),
            context=template.get("context"),
            seed=seed,
            budget=template.get("budget"),
            agent_rules=definition.room_rules(label).agents.room_setting(),
            **request_settings(template),
        )
    except ConversationValueError as exc:
        raise ConversationValueError(f"experiment condition {label!r}: {exc}") from None
    return config.to_dict()


def stand_in(definition: StudyDefinition, label: str, seat: str) -> dict[str, Any]:
    """The agent spec that takes seat ``seat`` of condition ``label`` (the template's role with
    the condition's traits)."""
    template = definition.data["experiment"]["template"]
    study_condition = definition.condition(label)
    condition = Condition.from_dict(
        {k: v for k, v in study_condition.model_dump().items() if k not in _SEAT_FIELDS}
    )
    for agent in room_agents(template, condition):
        if agent["name"] == seat:
            return agent
    raise ConversationValueError(f"seat {seat!r} is not a role of condition {label!r}")


__all__ = [
    "StudyDefinition",
    "definition_problems",
    "definition_from_dict",
    "group_room_config",
    "load_definition",
    "read_definition",
    "stand_in",
]
