"""Sign-in roles and the permission check the engine's API applies (see ``roles``)."""

from conversation.access.roles import (
    NEEDED,
    STAFF_ROLES,
    Action,
    Actor,
    Role,
    RoleTable,
    check_identity,
    parse_role,
    require,
    require_post,
    who,
)

__all__ = [
    "Action",
    "Actor",
    "NEEDED",
    "STAFF_ROLES",
    "Role",
    "RoleTable",
    "check_identity",
    "parse_role",
    "require",
    "require_post",
    "who",
]
