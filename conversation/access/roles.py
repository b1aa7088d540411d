"""Who may do what: roles, the acts they allow, the person acting, and the table of e-mails.

Three roles of the lab's people, each including the ones below it:

- ``observer``: reads everything (rooms, transcripts, results, exports), changes nothing;
- ``moderator``: also posts messages, approves / edits / denies / picks drafts, passes a turn,
  pauses, resumes and stops rooms and experiments;
- ``researcher``: also creates rooms (new, imported, forked), experiments, agents in the library,
  and runs analyses.

And one for a study's participant (``Actor.participant``): ``participant`` may post in their own
seat (a public message under the seat's name) and nothing else: not read a room, not post under
another name, not privately. Anyone who may post may do that too; an observer may not. The
table of e-mails never gives it: a participant holds a study's token, not a sign-in.

An ``Actor`` is the person behind a call: the identity the audit trail records (the signed-in
e-mail, or the name typed in the app when nobody signs in) and a role. The engine's API takes an
optional ``actor=``; ``None`` is the local single user, who may do everything (the behaviour
without sign-in). :func:`require` raises ``PermissionDenied`` before anything is written.

Pure: no clock, no I/O. The settings (``[roles]`` in ``.streamlit/secrets.toml``) arrive as a
mapping, read by the UI.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conversation.exceptions import ConversationValueError, PermissionDenied

MAX_IDENTITY_CHARS = 254  # an e-mail address's maximum length (RFC 5321)
#: How a participant's acts record who did them: ``participant <pseudonym>``.
PARTICIPANT_PREFIX = "participant "


class Role(enum.StrEnum):
    """A person's role; each includes the ones below it (see the module docstring)."""

    PARTICIPANT = "participant"
    OBSERVER = "observer"
    MODERATOR = "moderator"
    RESEARCHER = "researcher"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def includes(self, other: Role) -> bool:
        """Whether this role may do everything ``other`` may (a researcher includes a moderator,
        a moderator a participant; an observer does not include a participant: it posts nothing)."""
        return other in _INCLUDES[self]


_RANKS = {Role.PARTICIPANT: -1, Role.OBSERVER: 0, Role.MODERATOR: 1, Role.RESEARCHER: 2}
_INCLUDES: Mapping[Role, frozenset[Role]] = {
    Role.PARTICIPANT: frozenset({Role.PARTICIPANT}),
    Role.OBSERVER: frozenset({Role.OBSERVER}),
    Role.MODERATOR: frozenset({Role.MODERATOR, Role.OBSERVER, Role.PARTICIPANT}),
    Role.RESEARCHER: frozenset(Role),
}
#: The roles the table of e-mails gives (``[roles]``): the lab's people, not participants.
STAFF_ROLES: tuple[Role, ...] = (Role.OBSERVER, Role.MODERATOR, Role.RESEARCHER)


class Action(enum.StrEnum):
    """The acts the engine checks; :data:`NEEDED` gives the least role for each."""

    SPEAK_IN_SEAT = "speak_in_seat"
    READ = "read"
    POST = "post"
    MODERATE = "moderate"
    CONTROL = "control"
    CREATE_ROOM = "create_room"
    CREATE_EXPERIMENT = "create_experiment"
    EDIT_AGENTS = "edit_agents"
    RUN_ANALYSIS = "run_analysis"

    @property
    def needed(self) -> Role:
        return NEEDED[self]

    @property
    def phrase(self) -> str:
        """What the act is, in words (``"post messages"``)."""
        return _PHRASES[self]


NEEDED: Mapping[Action, Role] = {
    Action.SPEAK_IN_SEAT: Role.PARTICIPANT,
    Action.READ: Role.OBSERVER,
    Action.POST: Role.MODERATOR,
    Action.MODERATE: Role.MODERATOR,
    Action.CONTROL: Role.MODERATOR,
    Action.CREATE_ROOM: Role.RESEARCHER,
    Action.CREATE_EXPERIMENT: Role.RESEARCHER,
    Action.EDIT_AGENTS: Role.RESEARCHER,
    Action.RUN_ANALYSIS: Role.RESEARCHER,
}
_PHRASES = {
    Action.SPEAK_IN_SEAT: "post in their own seat",
    Action.READ: "read rooms and results",
    Action.POST: "post messages",
    Action.MODERATE: "approve, edit, deny or pass agent turns",
    Action.CONTROL: "pause, resume or stop rooms and experiments",
    Action.CREATE_ROOM: "create, import or fork rooms",
    Action.CREATE_EXPERIMENT: "create experiments",
    Action.EDIT_AGENTS: "change the agent library",
    Action.RUN_ANALYSIS: "run analyses",
}


def check_identity(value: Any, field: str = "by") -> str:
    """An identity for the audit trail: non-empty text of at most 254 characters without line
    breaks or control characters (an e-mail address or a name), or ``ConversationValueError``."""
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > MAX_IDENTITY_CHARS
        or any(ord(c) < 32 or ord(c) == 127 for c in value)
    ):
        shown = value[:80] if isinstance(value, str) else type(value).__name__
        raise ConversationValueError(
            f"{field}={shown!r} must be who acted: an e-mail address or a name, non-empty "
            f"text of at most {MAX_IDENTITY_CHARS} characters on one line"
        )
    return value.strip()


@dataclass(frozen=True, slots=True)
class Actor:
    """The person behind a call: ``identity`` (what the audit trail records), ``role``,
    whether they signed in, a display ``name`` when the provider gave one, and for a study's
    participant the ``seat`` they speak as."""

    identity: str
    role: Role = Role.RESEARCHER
    signed_in: bool = False
    name: str | None = None
    seat: str | None = None

    def __post_init__(self) -> None:
        check_identity(self.identity, "identity")
        if not isinstance(self.role, Role):
            object.__setattr__(self, "role", parse_role(self.role, "role", roles=tuple(Role)))
        if (self.role is Role.PARTICIPANT) != (self.seat is not None):
            raise ConversationValueError(
                "a participant actor speaks as one seat: give seat= with role=participant, "
                "and only then"
            )

    @classmethod
    def local(cls, name: str = "user") -> Actor:
        """The single local user of an app without sign-in: every role, recorded by ``name``."""
        return cls(identity=name, role=Role.RESEARCHER)

    @classmethod
    def participant(cls, pseudonym: str, seat: str) -> Actor:
        """A study's participant (recorded as ``participant <pseudonym>``, never a recruitment
        id) speaking as ``seat``."""
        return cls(identity=PARTICIPANT_PREFIX + pseudonym, role=Role.PARTICIPANT, seat=seat)

    @property
    def roles(self) -> frozenset[Role]:
        """Every role this actor holds (its own and those it includes)."""
        return frozenset(r for r in Role if self.role.includes(r))

    def can(self, action: Action) -> bool:
        return self.role.includes(NEEDED[Action(action)])

    def require(self, action: Action) -> None:
        """Return if the actor may do ``action``; else raise ``PermissionDenied``."""
        action = Action(action)
        if not self.can(action):
            raise PermissionDenied(
                f"{self.identity} ({self.role}) may not {action.phrase}: that needs the "
                f"{action.needed} role; ask an administrator to add this e-mail under "
                f"[roles] {action.needed} in the settings",
                actor=self.identity,
                action=str(action),
                needed=str(action.needed),
            )


def require(actor: Actor | None, action: Action) -> None:
    """The engine's check: ``None`` (the local full-rights user) may do everything."""
    if actor is not None:
        actor.require(action)


def require_post(actor: Actor | None, speaker: str, *, private: bool = False) -> None:
    """The check of a person's message: a participant may post a public message under their
    own seat's name (:attr:`Action.SPEAK_IN_SEAT`); anything else needs :attr:`Action.POST`."""
    if actor is not None and actor.seat is not None and speaker == actor.seat and not private:
        actor.require(Action.SPEAK_IN_SEAT)
    else:
        require(actor, Action.POST)


def who(actor: Actor | None, fallback: str) -> str:
    """The identity to record for an act: the actor's, or ``fallback`` (the speaker's name, or
    the ``by=`` a caller passed) for the local user."""
    return actor.identity if actor is not None else check_identity(fallback)


def parse_role(value: Any, field: str, *, roles: tuple[Role, ...] = STAFF_ROLES) -> Role:
    """The role ``value`` names among ``roles`` (by default the table's: no participant)."""
    try:
        role = Role(str(value).strip().lower())
    except ValueError:
        role = None
    if role is None or role not in roles:
        raise ConversationValueError(
            f"{field}={value!r} is not a role; use one of: {', '.join(r.value for r in roles)}"
        )
    return role


@dataclass(frozen=True, slots=True)
class RoleTable:
    """Roles by e-mail, from the settings' ``[roles]`` table::

        [roles]
        researcher = ["ana@lab.org"]
        moderator = ["*@lab.org"]      # a whole domain
        observer = []                  # optional: listed only to be explicit
        default = "observer"           # anyone else who signs in; "none" refuses them

    E-mails match case-insensitively; ``*@domain`` matches every address of the domain. Someone
    listed under several roles gets the highest. Without a ``[roles]`` table everyone who signs
    in is an observer.
    """

    entries: Mapping[Role, frozenset[str]]
    default: Role | None = Role.OBSERVER

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None) -> RoleTable:
        """The table from the ``[roles]`` mapping (``None``: nobody listed, default observer).
        A mistake raises ``ConversationValueError`` naming the key and the fix."""
        if settings is None:
            return cls({})
        if not isinstance(settings, Mapping):
            raise ConversationValueError(
                "[roles] must be a table: researcher = [...], moderator = [...], default = ..."
            )
        unknown = sorted(set(settings) - {r.value for r in STAFF_ROLES} - {"default"})
        if unknown:
            raise ConversationValueError(
                f"[roles] has unknown keys {unknown}; use researcher, moderator, observer and "
                "default"
            )
        entries: dict[Role, frozenset[str]] = {}
        for role in STAFF_ROLES:
            listed = settings.get(role.value, [])
            if isinstance(listed, str):
                listed = [listed]
            if not isinstance(listed, Iterable) or not all(isinstance(e, str) for e in listed):
                raise ConversationValueError(
                    f"[roles] {role.value} must be a list of e-mail addresses, e.g. "
                    f'{role.value} = ["ana@lab.org", "*@lab.org"]'
                )
            entries[role] = frozenset(_normal(e) for e in listed if e.strip())
        raw_default = settings.get("default", Role.OBSERVER.value)
        default = (
            None
            if str(raw_default).strip().lower() == "none"
            else parse_role(raw_default, "[roles] default")
        )
        return cls(entries, default)

    def role_of(self, email: str | None) -> Role | None:
        """The role of ``email`` (the highest it is listed under), else the default (``None``:
        no access)."""
        if email:
            address = _normal(email)
            domain = "*@" + address.rpartition("@")[2] if "@" in address else None
            for role in sorted(STAFF_ROLES, key=lambda r: r.rank, reverse=True):
                listed = self.entries.get(role, frozenset())
                if address in listed or (domain is not None and domain in listed):
                    return role
        return self.default

    def actor(self, email: str | None, name: str | None = None) -> Actor | None:
        """The signed-in person as an ``Actor`` (identity: the e-mail, else the name), or
        ``None`` when the table gives them no role."""
        identity = (email or name or "").strip()
        role = self.role_of(email)
        if not identity or role is None:
            return None
        return Actor(identity=identity, role=role, signed_in=True, name=name)


def _normal(address: str) -> str:
    return address.strip().lower()


__all__ = [
    "Action",
    "Actor",
    "NEEDED",
    "PARTICIPANT_PREFIX",
    "STAFF_ROLES",
    "Role",
    "RoleTable",
    "check_identity",
    "parse_role",
    "require",
    "require_post",
    "who",
]
