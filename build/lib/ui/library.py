"""The agent library's rules: validation per field, and import/export as JSON or an EDSL AgentList.

No Streamlit here: the Agents page calls these and shows the messages next to the fields they name.
Storage enforces uniqueness again on write; these checks exist so a person gets every problem at
once, phrased for the form, before anything is written.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FORMAT = "conversation-rooms/agents"
VERSION = 1
MAX_IMPORT_BYTES = 1_000_000
MAX_AGENTS = 500
MAX_TRAITS = 50
MAX_TEXT = 4_000
# The @-mention grammar (docs/design.md, "Rooms, activities and mentions"): an agent with such a name can be addressed as @name.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
TRAIT_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_AGENT_KEYS = {"name", "traits", "instruction", "model"}
_EDSL_AGENT_KEYS = {"name", "traits", "instruction", "edsl_version", "edsl_class_name"}


class LibraryError(ValueError):
    """An import or a draft that cannot be accepted; the message names the problem and the fix."""


@dataclass(frozen=True, slots=True)
class AgentDraft:
    """An agent as the library stores it: name, traits, persona instruction, model spec."""

    name: str
    traits: Mapping[str, Any] = field(default_factory=dict)
    instruction: str = ""
    model: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "traits": dict(self.traits),
            "instruction": self.instruction,
            "model": dict(self.model) if self.model is not None else None,
        }


def check_name(name: Any, taken: Iterable[str] = ()) -> str | None:
    """The problem with an agent name, or None. ``taken``: the other agents' names."""
    if not isinstance(name, str) or not name.strip():
        return "Give the agent a name."
    if not NAME_RE.match(name):
        return (
            f"{name!r} is not a usable name: start with a letter or digit, then use only letters, "
            "digits, '_', '-' or '.' (at most 64 characters, no spaces), so others can @mention it."
        )
    lowered = {t.lower() for t in taken}
    if name.lower() in lowered:
        return f"An agent named {name!r} already exists; agent names must be unique."
    return None


def traits_from_rows(rows: Sequence[Mapping[str, Any]]) -> tuple[dict[str, str], str | None]:
    """Traits from key/value rows (the traits table); blank rows are ignored.

    Returns ``(traits, problem)``; ``problem`` names the first bad key (empty, unsafe, repeated).
    """
    traits: dict[str, str] = {}
    for number, row in enumerate(rows, start=1):
        key = str(row.get("key") or "").strip()
        value = row.get("value")
        value = "" if value is None or (isinstance(value, float) and math.isnan(value)) else value
        value = str(value)
        if not key and not value.strip():
            continue
        if not key:
            return traits, f"Row {number}: the trait with value {value[:40]!r} needs a key."
        if not TRAIT_KEY_RE.match(key):
            return traits, (
                f"Row {number}: trait key {key!r} must start with a letter or '_' and use only "
                "letters, digits and '_' (e.g. 'budget' or 'private_value')."
            )
        if key in traits:
            return traits, f"Row {number}: trait key {key!r} appears twice; keep one."
        if len(value) > MAX_TEXT:
            return traits, f"Row {number}: trait {key!r} is longer than {MAX_TEXT} characters."
        traits[key] = value
    if len(traits) > MAX_TRAITS:
        return traits, f"An agent has at most {MAX_TRAITS} traits; this one has {len(traits)}."
    return traits, None


def validate(draft: AgentDraft, taken: Iterable[str] = ()) -> dict[str, str]:
    """Every problem with a draft, by field (``name``, ``traits``, ``instruction``, ``model``)."""
    problems: dict[str, str] = {}
    name_problem = check_name(draft.name, taken)
    if name_problem:
        problems["name"] = name_problem
    bad_keys = [k for k in draft.traits if not isinstance(k, str) or not TRAIT_KEY_RE.match(k)]
    if bad_keys:
        problems["traits"] = f"Trait keys {bad_keys!r} are not valid identifiers."
    elif len(draft.traits) > MAX_TRAITS:
        problems["traits"] = f"At most {MAX_TRAITS} traits per agent."
    if not isinstance(draft.instruction, str):
        problems["instruction"] = "The persona instruction must be text."
    elif len(draft.instruction) > MAX_TEXT:
        problems["instruction"] = f"The persona instruction is longer than {MAX_TEXT} characters."
    if draft.model is not None:
        from conversation.models import resolve_model

        try:
            resolve_model(dict(draft.model))
        except ValueError as exc:
            problems["model"] = str(exc)
    return problems


def add_missing(
    drafts: Iterable[AgentDraft], taken: Iterable[str], add: Callable[[AgentDraft], object]
) -> list[str]:
    """Call ``add`` for each draft whose name is not taken (case-insensitively); the names added."""
    lowered = {t.lower() for t in taken}
    added = []
    for draft in drafts:
        if draft.name.lower() not in lowered:
            add(draft)
            lowered.add(draft.name.lower())
            added.append(draft.name)
    return added


def unique_copy_name(name: str, taken: Iterable[str]) -> str:
    """A free name for a copy of ``name``: ``name_copy``, ``name_copy2``, ..."""
    lowered = {t.lower() for t in taken}
    base = f"{name[:58]}_copy"
    candidate, number = base, 1
    while candidate.lower() in lowered:
        number += 1
        candidate = f"{base}{number}"
    return candidate


# --- export ------------------------------------------------------------------------------------


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


# --- import ------------------------------------------------------------------------------------


def parse_import(data: bytes | str) -> list[AgentDraft]:
    """Agents from this app's JSON export, an EDSL ``AgentList`` dict, or a list of agent dicts.

    Strict: a size cap, known keys only, text values, valid names, no duplicates. Raises
    :class:`LibraryError` naming the first problem (nothing is imported then).
    """
    raw = data.encode() if isinstance(data, str) else data
    if len(raw) > MAX_IMPORT_BYTES:
        raise LibraryError(
            f"The file is {len(raw):,} bytes; imports are limited to {MAX_IMPORT_BYTES:,} bytes."
        )
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise LibraryError(f"The file is not valid JSON: {exc}") from None
    items: Any
    if isinstance(document, list):
        items, edsl = document, False
    elif isinstance(document, dict) and document.get("edsl_class_name") == "AgentList":
        items, edsl = document.get("agent_list"), True
    elif isinstance(document, dict) and document.get("format") == FORMAT:
        if document.get("version") != VERSION:
            raise LibraryError(
                f"Unsupported agents file version {document.get('version')!r}; this app reads "
                f"version {VERSION}."
            )
        extra = sorted(set(document) - {"format", "version", "agents"})
        if extra:
            raise LibraryError(f"Unknown top-level field(s) {extra}; remove them.")
        items, edsl = document.get("agents"), False
    else:
        raise LibraryError(
            "Not an agents file: expected this app's export (format "
            f"{FORMAT!r}), an EDSL AgentList, or a JSON list of agents."
        )
    if not isinstance(items, list):
        raise LibraryError("The agents must be a JSON list.")
    if len(items) > MAX_AGENTS:
        raise LibraryError(f"At most {MAX_AGENTS} agents per import; this file has {len(items)}.")
    drafts: list[AgentDraft] = []
    names: list[str] = []
    for number, item in enumerate(items, start=1):
        draft = _agent(item, number, edsl=edsl)
        problems = validate(draft, names)
        if problems:
            field_name, message = next(iter(problems.items()))
            raise LibraryError(f"Agent {number} ({draft.name!r}), {field_name}: {message}")
        names.append(draft.name)
        drafts.append(draft)
    return drafts


def _reject_constant(value: str) -> Any:
    raise LibraryError(f"The file contains {value}, which is not valid in an agents file.")


def _agent(item: Any, number: int, *, edsl: bool) -> AgentDraft:
    if not isinstance(item, dict):
        raise LibraryError(f"Agent {number} must be a JSON object, not {type(item).__name__}.")
    allowed = _EDSL_AGENT_KEYS if edsl or "edsl_class_name" in item else _AGENT_KEYS
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise LibraryError(
            f"Agent {number} has unknown field(s) {unknown}; allowed: {sorted(allowed)}."
        )
    name = item.get("name")
    traits = item.get("traits") or {}
    instruction = item.get("instruction") or ""
    model = item.get("model")
    if not isinstance(traits, dict):
        raise LibraryError(f"Agent {number}: traits must be an object of key/value pairs.")
    for key, value in traits.items():
        if isinstance(value, dict | list) or value is None:
            raise LibraryError(
                f"Agent {number}: trait {key!r} must be text or a number, not "
                f"{type(value).__name__}."
            )
    if not isinstance(instruction, str):
        raise LibraryError(f"Agent {number}: instruction must be text.")
    if model is not None and not isinstance(model, dict):
        raise LibraryError(f"Agent {number}: model must be a model spec object or null.")
    return AgentDraft(
        name=name if isinstance(name, str) else "",
        traits={str(k): str(v) for k, v in traits.items()},
        instruction=instruction,
        model=model,
    )


__all__ = [
    "AgentDraft",
    "add_missing",
    "FORMAT",
    "LibraryError",
    "VERSION",
    "check_name",
    "export_agent_list",
    "export_json",
    "parse_import",
    "traits_from_rows",
    "unique_copy_name",
    "validate",
]
