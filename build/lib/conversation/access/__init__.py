"""Sign-in roles and the permission check the engine's API applies (see ``roles``)."""

from conversation.access.roles import (
    NEEDED,
    Action,
    Actor,
    Role,
    RoleTable,
    check_identity,
    parse_role,
    require,
    who,
)

__all__ = [
    "Action",
    "Actor",
    "NEEDED",
    "Role",
    "RoleTable",
    "check_identity",
    "parse_role",
    "require",
    "who",
]
