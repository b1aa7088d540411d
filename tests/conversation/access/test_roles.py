"""The roles table: who gets which role from the settings, the hierarchy, and typed refusals."""

from __future__ import annotations

import pytest

from conversation.access import NEEDED, Action, Actor, Role, RoleTable, check_identity, require
from conversation.exceptions import ConversationValueError, PermissionDenied

SETTINGS = {
    "researcher": ["Ana@Lab.org"],
    "moderator": ["mo@lab.org", "*@clinic.example"],
    "observer": ["ana@lab.org"],  # listed twice: the higher role wins
    "default": "observer",
}


@pytest.mark.parametrize(
    ("email", "role"),
    [
        ("ana@lab.org", Role.RESEARCHER),
        ("ANA@LAB.ORG", Role.RESEARCHER),  # e-mails match case-insensitively
        ("mo@lab.org", Role.MODERATOR),
        ("nurse@clinic.example", Role.MODERATOR),  # a whole domain
        ("nurse@sub.clinic.example", Role.OBSERVER),  # not the same domain
        ("someone@else.org", Role.OBSERVER),  # the default
        (None, Role.OBSERVER),
    ],
)
def test_role_of_an_email(email: str | None, role: Role) -> None:
    assert RoleTable.from_settings(SETTINGS).role_of(email) is role


def test_no_roles_table_makes_everyone_an_observer_and_none_refuses_strangers() -> None:
    assert RoleTable.from_settings(None).role_of("x@y.org") is Role.OBSERVER
    closed = RoleTable.from_settings({"moderator": ["mo@lab.org"], "default": "none"})
    assert closed.actor("x@y.org", "X") is None
    actor = closed.actor("mo@lab.org", "Mo")
    assert actor == Actor("mo@lab.org", Role.MODERATOR, signed_in=True, name="Mo")


def test_an_actor_is_identified_by_email_else_by_name() -> None:
    table = RoleTable.from_settings(SETTINGS)
    assert table.actor("ana@lab.org", "Ana").identity == "ana@lab.org"
    assert table.actor(None, "Ana Lima").identity == "Ana Lima"
    assert table.actor(None, None) is None


@pytest.mark.parametrize(
    ("settings", "names"),
    [
        ({"researchers": ["a@b.c"]}, "unknown keys"),
        ({"moderator": "a@b.c", "default": "admin"}, "default='admin' is not a role"),
        ({"moderator": [1, 2]}, "moderator must be a list"),
        (["a@b.c"], "must be a table"),
    ],
)
def test_a_bad_roles_table_is_refused_naming_the_key(settings: object, names: str) -> None:
    with pytest.raises(ConversationValueError, match=names):
        RoleTable.from_settings(settings)  # type: ignore[arg-type]


def test_a_single_string_is_one_address() -> None:
    assert RoleTable.from_settings({"moderator": "mo@lab.org"}).role_of("mo@lab.org") is (
        Role.MODERATOR
    )


# -- the hierarchy ----------------------------------------------------------------------------------

ALLOWED = {
    Role.OBSERVER: {Action.READ},
    Role.MODERATOR: {Action.READ, Action.POST, Action.MODERATE, Action.CONTROL},
    Role.RESEARCHER: set(Action),
}


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("action", list(Action))
def test_each_role_may_do_exactly_its_acts(role: Role, action: Action) -> None:
    actor = Actor("p@lab.org", role, signed_in=True)
    assert actor.can(action) is (action in ALLOWED[role])
    if action in ALLOWED[role]:
        actor.require(action)
        require(actor, action)
    else:
        with pytest.raises(PermissionDenied) as refused:
            require(actor, action)
        assert (refused.value.actor, refused.value.action) == ("p@lab.org", action.value)
        assert refused.value.needed == NEEDED[action].value
        assert f"needs the {NEEDED[action]} role" in str(refused.value)


def test_roles_include_the_ones_below() -> None:
    assert Actor("r", Role.RESEARCHER).roles == frozenset(Role)
    assert Actor("m", Role.MODERATOR).roles == {Role.MODERATOR, Role.OBSERVER}
    assert Actor("o", Role.OBSERVER).roles == {Role.OBSERVER}


def test_no_actor_and_the_local_user_may_do_everything() -> None:
    for action in Action:
        require(None, action)
        assert Actor.local("ann").can(action)
    assert Actor.local("ann").identity == "ann" and not Actor.local().signed_in


def test_permission_denied_is_a_permission_error() -> None:
    with pytest.raises(PermissionError):
        require(Actor("o@x.org", Role.OBSERVER), Action.POST)


@pytest.mark.parametrize("bad", ["", "   ", "a\nb", "x" * 255, None, 7])
def test_identities_are_one_line_of_bounded_text(bad: object) -> None:
    with pytest.raises(ConversationValueError, match="by="):
        check_identity(bad)
    with pytest.raises(ConversationValueError):
        Actor(bad, Role.OBSERVER)  # type: ignore[arg-type]


def test_a_role_given_as_text_is_parsed() -> None:
    assert Actor("a", "moderator").role is Role.MODERATOR  # type: ignore[arg-type]
    with pytest.raises(ConversationValueError, match="not a role"):
        Actor("a", "boss")  # type: ignore[arg-type]
