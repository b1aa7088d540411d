"""Files of agents: the library exported as this app's JSON or as an EDSL ``AgentList``, and
read back (from either, or from a plain JSON list of agents) through a door schema.

An agents file is untrusted input, checked once where it enters and refused as a whole
(``AgentsFileRejected``, nothing imported) with a message in a person's words that names the
agent and the field: ``Agent 2: trait 'budget' must be text or a number, not dict``. The bytes
are read by ``text.json_input`` (size, UTF-8, JSON without ``NaN``, depth); the shape by the
schemas below (known fields only, text where text is due); each agent then by the library's own
rules (``drafts.validate``: a usable and unique name, trait keys, the instruction's length, a
model spec that resolves).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator

from conversation.exceptions import ConversationValueError
from conversation.library.drafts import AgentDraft, validate
from conversation.text.json_input import read_json
from conversation.text.limits import MAX_DEPTH as MAX_CONFIG_DEPTH
from conversation.text.schema import DoorModel, Loc, Problem, validated

FORMAT = "conversation-rooms/agents"
VERSION = 1
MAX_IMPORT_BYTES = 1_000_000
MAX_AGENTS = 500
#: The file, its list of agents and an agent around a config-deep model spec.
MAX_DEPTH = MAX_CONFIG_DEPTH + 3


class AgentsFileRejected(ConversationValueError):
    """An agents file was refused as a whole (nothing was imported); the message names the
    agent and the field, and how to fix it."""


def _trait_value(value: Any) -> Any:
    if isinstance(value, dict | list) or value is None:
        raise Problem(f"must be text or a number, not {type(value).__name__}")
    return value


TraitValue = Annotated[Any, AfterValidator(_trait_value)]


def _name_value(value: Any) -> str:
    if value is None:
        return ""  # EDSL writes an unnamed agent's name as null: "Give the agent a name."
    if not isinstance(value, str):
        raise Problem(f"must be text, not {type(value).__name__}")
    return value


#: A name as written (the name rule is the library's, ``drafts.check_name``, checked after).
NameValue = Annotated[Any, AfterValidator(_name_value)]


class AgentIn(DoorModel):
    """One agent of this app's file (or of a plain list): the library's fields."""

    name: NameValue = ""
    traits: dict[str, TraitValue] | None = None
    instruction: str | None = None
    model: dict[str, Any] | None = None


class EdslAgentIn(DoorModel):
    """One agent of an EDSL ``AgentList`` (``Agent.to_dict()``): no model of its own."""

    name: NameValue = ""
    traits: dict[str, TraitValue] | None = None
    instruction: str | None = None
    edsl_version: Any = None
    edsl_class_name: Any = None


class AgentsFileIn(DoorModel):
    """This app's export: ``{"format", "version", "agents": [...]}``."""

    format: str
    version: Any
    agents: list[Any]


class AgentListIn(DoorModel):
    """An EDSL ``AgentList`` (``AgentList.to_dict()``): its ``agent_list``; EDSL's other fields
    are left as they are."""

    open_fields: ClassVar[bool] = True

    agent_list: list[Any]


def _file_place(loc: Loc) -> str:
    return " ".join(["the file", *map(str, loc)])


def _agent_place(number: int) -> Any:
    def place(loc: Loc) -> str:
        if not loc:
            return f"Agent {number}"
        if loc[0] == "traits" and len(loc) > 1:
            return f"Agent {number}: trait {str(loc[1])!r}"
        return f"Agent {number}: {loc[0]}"

    return place


def read_agents_file(data: bytes | str) -> list[AgentDraft]:
    """The agents of this app's export, an EDSL ``AgentList`` or a JSON list of agents, each
    checked (see the module docstring); ``AgentsFileRejected`` naming the first problem."""
    document = read_json(
        data,
        what="the file",
        max_bytes=MAX_IMPORT_BYTES,
        max_depth=MAX_DEPTH,
        error=AgentsFileRejected,
    )
    items: list[Any]
    if isinstance(document, list):
        items, edsl = document, False
    elif isinstance(document, Mapping) and document.get("edsl_class_name") == "AgentList":
        agent_list = validated(AgentListIn, document, error=AgentsFileRejected, place=_file_place)
        items, edsl = agent_list.agent_list, True
    elif isinstance(document, Mapping) and document.get("format") == FORMAT:
        if document.get("version") != VERSION:
            raise AgentsFileRejected(
                f"Unsupported agents file version {document.get('version')!r}; this app reads "
                f"version {VERSION}."
            )
        envelope = validated(AgentsFileIn, document, error=AgentsFileRejected, place=_file_place)
        items, edsl = envelope.agents, False
    else:
        raise AgentsFileRejected(
            "Not an agents file: expected this app's export (format "
            f"{FORMAT!r}), an EDSL AgentList, or a JSON list of agents."
        )
    if len(items) > MAX_AGENTS:
        raise AgentsFileRejected(
            f"At most {MAX_AGENTS} agents per import; this file has {len(items)}."
        )
    drafts: list[AgentDraft] = []
    for number, item in enumerate(items, start=1):
        draft = _draft(item, number, edsl=edsl)
        problems = validate(draft, [d.name for d in drafts])
        if problems:
            field_name, message = next(iter(problems.items()))
            named = f" ({draft.name!r})" if draft.name else ""
            raise AgentsFileRejected(f"Agent {number}{named}, {field_name}: {message}")
        drafts.append(draft)
    return drafts


def _draft(item: Any, number: int, *, edsl: bool) -> AgentDraft:
    """One agent through its schema (an EDSL agent's when the file or the item says so)."""
    agent: AgentIn | EdslAgentIn
    place = _agent_place(number)
    if edsl or (isinstance(item, Mapping) and "edsl_class_name" in item):
        agent = validated(EdslAgentIn, item, error=AgentsFileRejected, place=place)
    else:
        agent = validated(AgentIn, item, error=AgentsFileRejected, place=place)
    return AgentDraft(
        name=agent.name,
        traits={str(k): str(v) for k, v in (agent.traits or {}).items()},
        instruction=agent.instruction or "",
        model=agent.model if isinstance(agent, AgentIn) else None,
    )


def export_json(agents: Iterable[AgentDraft]) -> str:
    """The library as versioned JSON (name, traits, instruction, model spec; never a key)."""
    return json.dumps(
        {"format": FORMAT, "version": VERSION, "agents": [a.to_dict() for a in agents]},
        indent=2,
        ensure_ascii=False,
    )


def export_agent_list(agents: Iterable[AgentDraft]) -> str:
    """The library as an EDSL ``AgentList`` (JSON of ``AgentList.to_dict()``); models are dropped."""
    from edsl import Agent, AgentList

    edsl_agents = [
        Agent(name=a.name, traits=dict(a.traits), instruction=a.instruction or None) for a in agents
    ]
    return json.dumps(AgentList(edsl_agents).to_dict(), indent=2, ensure_ascii=False)


__all__ = [
    "FORMAT",
    "MAX_AGENTS",
    "MAX_IMPORT_BYTES",
    "VERSION",
    "AgentsFileRejected",
    "export_agent_list",
    "export_json",
    "read_agents_file",
]
