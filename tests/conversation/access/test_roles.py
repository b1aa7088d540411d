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
    Role.PARTICIPANT: {Action.SPEAK_IN_SEAT},
    Role.OBSERVER: {Action.READ},
    Role.MODERATOR: {
        Action.SPEAK_IN_SEAT,
        Action.READ,
        Action.POST,
        Action.MODERATE,
        Action.CONTROL,
    },
    Role.RESEARCHER: set(Action),
}


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("action", list(Action))
def test_each_role_may_do_exactly_its_acts(role: Role, action: Action) -> None:
    seat = "Buyer" if role is Role.PARTICIPANT else None
    actor = Actor("p@lab.org", role, signed_in=True, seat=seat)
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
    assert Actor("m", Role.MODERATOR).roles == {Role.MODERATOR, Role.OBSERVER, Role.PARTICIPANT}
    assert Actor("o", Role.OBSERVER).roles == {Role.OBSERVER}
    assert Actor.participant("p-1", "Buyer").roles == {Role.PARTICIPANT}


def test_a_participant_posts_in_their_own_seat_and_nothing_else() -> None:
    from conversation.access import require_post

    person = Actor.participant("p-3fa9c2", "Buyer")
    assert person.identity == "participant p-3fa9c2" and person.seat == "Buyer"
    require_post(person, "Buyer")
    for speaker, private in (("Seller", False), ("Mediator", False), ("Buyer", True)):
        with pytest.raises(PermissionDenied, match="may not post messages"):
            require_post(person, speaker, private=private)
    for action in set(Action) - {Action.SPEAK_IN_SEAT}:
        with pytest.raises(PermissionDenied):
            require(person, action)
    # an observer has no seat to speak in; a moderator may post as anyone
    with pytest.raises(PermissionDenied):
        require_post(Actor("o@lab.org", Role.OBSERVER), "Buyer")
    require_post(Actor("m@lab.org", Role.MODERATOR), "Buyer", private=True)
    with pytest.raises(ConversationValueError, match="seat"):
        Actor("x@lab.org", Role.PARTICIPANT)
    with pytest.raises(ConversationValueError, match="seat"):
        Actor("x@lab.org", Role.MODERATOR, seat="Buyer")


def test_the_table_of_e_mails_never_makes_a_participant() -> None:
    with pytest.raises(ConversationValueError, match="not a role"):
        RoleTable.from_settings({"default": "participant"})
    with pytest.raises(ConversationValueError, match="unknown keys"):
        RoleTable.from_settings({"participant": ["p@x.org"]})


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
