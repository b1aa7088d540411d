"""Writing the agent library (``storage.experiments.profiles``) on behalf of a person.

The same calls as ``storage``'s, with ``actor=``: a person whose role may not change the library
(``Action.EDIT_AGENTS``, researchers) gets ``PermissionDenied`` and nothing is written; ``None``
is the local full-rights user. A write storage refuses (a duplicate name, a secret in a trait)
is a ``ConversationValueError`` naming the problem (``conversation.boundary``).
"""

from __future__ import annotations

from typing import Any

import storage
from conversation.access.roles import Action, Actor, require
from conversation.boundary import storage_errors


def create_profile(
    db: storage.Database, name: str, *, actor: Actor | None = None, **fields: Any
) -> int:
    """Add an agent (``traits``, ``instruction``, ``model``) to the library; its id."""
    require(actor, Action.EDIT_AGENTS)
    return storage_errors(storage.create_agent_profile, db, name, **fields)


def update_profile(
    db: storage.Database, profile_id: int, *, actor: Actor | None = None, **fields: Any
) -> storage.AgentProfile:
    """Change an agent of the library (``name``, ``traits``, ``instruction``, ``model``)."""
    require(actor, Action.EDIT_AGENTS)
    return storage_errors(storage.update_agent_profile, db, profile_id, **fields)


def delete_profile(db: storage.Database, profile_id: int, *, actor: Actor | None = None) -> bool:
    """Remove an agent from the library (rooms keep their own copies)."""
    require(actor, Action.EDIT_AGENTS)
    return storage_errors(storage.delete_agent_profile, db, profile_id)


__all__ = ["create_profile", "delete_profile", "update_profile"]
