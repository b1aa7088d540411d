"""The agent library's rules: an agent as the library holds it (``AgentDraft``) and its checks
per field, in a person's words (the Agents page shows each next to the field it names).

Storage enforces uniqueness again on write; these checks exist so a person gets every problem at
once, phrased for the form, before anything is written. Files of agents: ``agents_file``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_TRAITS = 50
MAX_TEXT = 4_000
# The @-mention grammar (docs/design.md, "Rooms, activities and mentions"): an agent with such a name can be addressed as @name.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
TRAIT_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


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


__all__ = [
    "AgentDraft",
    "add_missing",
    "check_name",
    "traits_from_rows",
    "unique_copy_name",
    "validate",
]
