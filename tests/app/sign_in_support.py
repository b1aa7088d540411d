"""Shared set-up of the sign-in tests: an ``[auth]`` section and a role table for
``AppTest.secrets``, a signed-in (or not) ``st.user``, and the app opened as that user."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from tests.app.page_support import ROOT

APP = str(ROOT / "app.py")
AUTH = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "not-a-real-secret",
    "client_id": "rooms",
    "client_secret": "not-a-real-secret",
    "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
    "keycloak": {
        "client_id": "rooms",
        "client_secret": "not-a-real-secret",
        "server_metadata_url": "http://127.0.0.1:9/realms/lab/.well-known/openid-configuration",
    },
}
ROLES = {"researcher": ["ana@lab.org"], "moderator": ["mo@lab.org"], "default": "observer"}


def signed_in_app(user: dict[str, Any], page: str | None = None, **params: str) -> AppTest:
    """The app with ``[auth]`` and the role table, seen by ``user`` (see :func:`user`)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets["auth"] = AUTH
    at.secrets["roles"] = ROLES
    at.user = user
    at.run()
    if page:
        at.switch_page(page)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def user(email: str, name: str = "Someone") -> dict[str, Any]:
    """A signed-in ``st.user`` with this e-mail."""
    return {"is_logged_in": True, "email": email, "name": name}


def plain(at: AppTest) -> str:
    """Every ``st.text`` of the page, one per line."""
    return "\n".join(t.value for t in at.text)
