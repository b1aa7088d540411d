"""The agent library: agent profiles (name, traits, persona instruction, model spec)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from storage.checks import UNSET, _Unset, check_name, json_object
from storage.database import Database
from storage.database.statements import add_row
from storage.errors import (
    AgentProfileNotFound,
    DuplicateName,
    StorageValueError,
)
from storage.tables import AgentProfile

AGENT_NAME_MAX = 100
#: An agent's traits and model spec as JSON, and its persona instruction (the same limits a
#: room's roster applies: ``conversation.text.limits``).
TRAITS_MAX_CHARS = 20_000
INSTRUCTION_MAX_CHARS = 4_000


# --- agent profiles ----------------------------------------------------------------------------


def _check_profile(name: str | _Unset, traits: Any, instruction: Any, model: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if not isinstance(name, _Unset):
        values["name"] = check_name(name, "name", max_length=AGENT_NAME_MAX)
    if not isinstance(traits, _Unset):
        traits = json_object(traits, "traits", max_chars=TRAITS_MAX_CHARS)
        bad = [key for key in traits if not isinstance(key, str) or not key.strip()]
        if bad:
            raise StorageValueError(f"traits keys must be non-empty strings; got {bad!r}")
        values["traits"] = traits
    if not isinstance(instruction, _Unset):
        if not isinstance(instruction, str):
            raise StorageValueError(
                f"instruction must be a string, not {type(instruction).__name__}"
            )
        if len(instruction) > INSTRUCTION_MAX_CHARS:
            raise StorageValueError(
                f"instruction is {len(instruction):,} characters; the limit is "
                f"{INSTRUCTION_MAX_CHARS:,}"
            )
        values["instruction"] = instruction
    if not isinstance(model, _Unset):
        values["model"] = json_object(model, "model", optional=True, max_chars=TRAITS_MAX_CHARS)
    return values


def create_agent_profile(
    db: Database,
    name: str,
    *,
    traits: dict[str, Any] | None = None,
    instruction: str = "",
    model: dict[str, Any] | None = None,
) -> int:
    """Add an agent to the library; return its id.

    ``name`` is unique (:class:`DuplicateName`), at most 100 characters, no control characters.
    ``traits`` and ``model`` (a model spec) are strict, secret-free JSON objects.
    """
    values = _check_profile(name, {} if traits is None else traits, instruction, model)
    now = db.now()
    try:
        with db.write() as session:
            if session.exec(select(AgentProfile.id).where(AgentProfile.name == name)).first():
                raise _duplicate(name)
            profile = AgentProfile(**values, created_at=now, updated_at=now)
            return add_row(session, profile)
    except IntegrityError:
        raise _duplicate(name) from None


def _duplicate(name: str) -> DuplicateName:
    return DuplicateName(
        f"an agent named {name!r} already exists; agent names must be unique (rename one)"
    )


def get_agent_profile(db: Database, id_or_name: int | str) -> AgentProfile:
    """One agent profile by id or by name. Raises :class:`AgentProfileNotFound`."""
    query = select(AgentProfile)
    if isinstance(id_or_name, str):
        query = query.where(AgentProfile.name == id_or_name)
    else:
        query = query.where(AgentProfile.id == id_or_name)
    with db.read() as session:
        profile = session.exec(query).first()
    if profile is None:
        raise AgentProfileNotFound(f"no agent profile {id_or_name!r}")
    return profile


def list_agent_profiles(db: Database) -> list[AgentProfile]:
    """Every agent profile, by name."""
    with db.read() as session:
        return list(session.exec(select(AgentProfile).order_by(col(AgentProfile.name))))


def update_agent_profile(
    db: Database,
    profile_id: int,
    *,
    name: str | _Unset = UNSET,
    traits: dict[str, Any] | _Unset = UNSET,
    instruction: str | _Unset = UNSET,
    model: dict[str, Any] | None | _Unset = UNSET,
) -> AgentProfile:
    """Change the given fields and return the profile (same checks as on create)."""
    values = _check_profile(name, traits, instruction, model)
    try:
        with db.write() as session:
            profile = session.get(AgentProfile, profile_id)
            if profile is None:
                raise AgentProfileNotFound(f"no agent profile {profile_id!r}")
            if "name" in values and values["name"] != profile.name:
                taken = session.exec(
                    select(AgentProfile.id).where(AgentProfile.name == values["name"])
                ).first()
                if taken is not None:
                    raise _duplicate(values["name"])
            for key, value in values.items():
                setattr(profile, key, value)
            profile.updated_at = db.now()
            return profile
    except IntegrityError:
        raise _duplicate(str(values.get("name"))) from None


def delete_agent_profile(db: Database, profile_id: int) -> bool:
    """Delete a profile from the library (rooms keep their own copy of agent specs)."""
    with db.write() as session:
        result = session.exec(delete(AgentProfile).where(col(AgentProfile.id) == profile_id))
        return bool(result.rowcount)


__all__ = [
    "AGENT_NAME_MAX",
    "create_agent_profile",
    "delete_agent_profile",
    "get_agent_profile",
    "list_agent_profiles",
    "update_agent_profile",
]
