"""Sign-in and roles in the app: Streamlit's own ``st.login`` (OpenID Connect through Authlib).

Off unless ``.streamlit/secrets.toml`` has an ``[auth]`` section: then the app is one local user
with every role (:meth:`Actor.local`, recorded by the name typed in the sidebar), exactly as
without this module. With ``[auth]``, :func:`admitted` is false until the person signed in, and
:func:`sign_in_screen` is all that is drawn (``ui.bootstrap`` checks it before any page runs);
the signed-in person's role comes from the ``[roles]`` table (``conversation.access.RoleTable``)
and the pages pass :func:`current_actor` to every engine call, which refuses what the role does
not allow. Pages also hide or disable those controls and say why with :func:`note`.

Providers: ``client_id`` etc. directly under ``[auth]`` is the default provider (``st.login()``);
each ``[auth.<name>]`` table is a named one (``st.login("<name>")``), one button each.

The sign-in screen imports nothing of the engine (``conversation`` loads EDSL, seconds of work):
a visitor who has not signed in costs the server almost nothing.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import streamlit as st

from ui.widgets import escape_markdown

if TYPE_CHECKING:
    from conversation.access import Action, Actor, RoleTable

_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def _secret(name: str) -> Any:
    with contextlib.suppress(FileNotFoundError, st.errors.StreamlitSecretNotFoundError):
        if name in st.secrets:
            return st.secrets[name]
    return None


def _plain(value: Any) -> Any:
    """Streamlit's secrets sections (``AttrDict``) as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def sign_in_required() -> bool:
    """Whether sign-in is configured (an ``[auth]`` section in the secrets)."""
    return isinstance(_secret("auth"), Mapping)


def providers() -> list[str | None]:
    """The configured providers: ``None`` for the default one, then each named one."""
    auth = _plain(_secret("auth")) or {}
    found: list[str | None] = [None] if "client_id" in auth else []
    found += [name for name, value in auth.items() if isinstance(value, Mapping)]
    return found


def role_table() -> RoleTable:
    """The ``[roles]`` table of the secrets (raises ``ConversationValueError`` on a mistake)."""
    from conversation.access import RoleTable

    return RoleTable.from_settings(_plain(_secret("roles")))


def _signed_in() -> bool:
    return bool(st.user.is_logged_in)


def _claims() -> tuple[str | None, str | None]:
    user = st.user
    # Microsoft Entra ID sends the address as preferred_username unless the optional email
    # claim is configured; Google and Keycloak send email.
    username = user.get("preferred_username")
    email = user.get("email") or (username if username and "@" in str(username) else None)
    name = user.get("name") or username
    return (str(email) if email else None, str(name) if name else None)


def typed_name() -> str:
    """The name typed in the sidebar ("Your name in rooms"), default ``user``."""
    name = str(st.session_state.get("human_name") or "user").strip()
    return name or "user"


def default_name() -> str:
    """The sidebar's first name: ``user``, or the signed-in e-mail's local part (``ana`` for
    ``ana@lab.org``) made into a speaker name."""
    if not sign_in_required() or not _signed_in():
        return "user"
    email, name = _claims()
    base = (email or "").partition("@")[0] or name or "user"
    return _NOT_A_NAME.sub("_", base).strip("_.-")[:64] or "user"


def current_actor() -> Actor:
    """Who is using the app now: the local full-rights user without sign-in; otherwise the
    signed-in person with the role the ``[roles]`` table gives (an observer when they are not
    admitted at all, so a page reached anyway can change nothing)."""
    from conversation.access import Actor, Role
    from conversation.exceptions import ConversationValueError

    if not sign_in_required():
        return Actor.local(typed_name())
    email, name = _claims()
    actor = None
    if _signed_in():
        with contextlib.suppress(ConversationValueError):
            actor = role_table().actor(email, name)
    if actor is None:
        return Actor(identity=email or name or "anonymous", role=Role.OBSERVER, signed_in=True)
    return actor


def admitted() -> bool:
    """Whether the app may be drawn: no sign-in configured, or signed in with a role."""
    if not sign_in_required():
        return True
    if not _signed_in():
        return False
    from conversation.exceptions import ConversationValueError

    email, name = _claims()
    try:
        return role_table().actor(email, name) is not None
    except ConversationValueError:
        return False


def sign_in_screen(title: str) -> None:
    """All a visitor sees before signing in: the title and one button per provider (or why a
    signed-in person has no access, or what is wrong with the settings)."""
    st.title(escape_markdown(title))
    if _signed_in():
        from conversation.exceptions import ConversationValueError

        try:
            role_table()
        except ConversationValueError as exc:
            st.error("The sign-in settings are not valid. " + escape_markdown(exc))
            return
        email, name = _claims()
        st.text(
            f"You are signed in as {email or name}, but this address has no role here. "
            "Ask an administrator to add it under [roles] in the settings."
        )
        if st.button("Sign out", key="sign-out"):
            st.logout()
        return
    st.text("Sign in to see the rooms.")
    found = providers()
    if not found:
        st.error(
            "Sign-in is configured without a provider: add client_id, client_secret and "
            "server_metadata_url under [auth] or in an [auth.NAME] table."
        )
        return
    for provider in found:
        label = "Sign in" if provider is None else f"Sign in with {provider.capitalize()}"
        if st.button(label, key=f"sign-in-{provider or 'default'}", type="primary"):
            st.login() if provider is None else st.login(provider)


def identity_sidebar() -> None:
    """Inside the sidebar: who is signed in, with which role, and a sign-out button."""
    if not sign_in_required():
        return
    actor = current_actor()
    st.text(f"Signed in as {actor.identity} ({actor.role})")
    if st.button("Sign out", key="sign-out-sidebar"):
        st.logout()


def can(action: Action) -> bool:
    """Whether the person using the app may do ``action``."""
    return current_actor().can(action)


def note(action: Action) -> None:
    """A short plain-text line saying why a control is missing or disabled."""
    actor = current_actor()
    st.text(f"Your role ({actor.role}) cannot {action.phrase}; it needs the {action.needed} role.")


__all__ = [
    "admitted",
    "can",
    "current_actor",
    "default_name",
    "identity_sidebar",
    "note",
    "providers",
    "role_table",
    "sign_in_required",
    "sign_in_screen",
    "typed_name",
]
