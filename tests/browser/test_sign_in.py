"""Signing in for real: a local OpenID Connect provider (``oidc-provider-mock``) on 127.0.0.1, a
``streamlit run app.py`` whose secrets (in its temporary HOME's ``.streamlit/secrets.toml``) point
``[auth]`` at it, and Chromium going through the provider's login form.

Before sign-in the deep link to a room shows only the sign-in button (no navigation, no
transcript). After signing in as an observer the room is readable, but the chat box is disabled,
the draft waiting for approval has no Approve button and the room controls are disabled; and the
engine refuses the same acts for that person's actor (the API, not only the page).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conversation.access import RoleTable
from conversation.exceptions import PermissionDenied
from tests.browser.browser_helpers import idle, wait_text
from tests.browser.conftest import AppServer, free_port
from ui.room import rooms
from ui.room.templates import MUG_NEGOTIATION

pytestmark = pytest.mark.browser

OBSERVER = "olga@lab.org"
ROLES = {"moderator": ["mo@lab.org"], "default": "observer"}


@pytest.fixture
def provider() -> Iterator[str]:
    """A real OpenID Connect provider on 127.0.0.1 (any client id and secret are accepted)."""
    oidc_provider_mock = pytest.importorskip("oidc_provider_mock")
    from werkzeug.serving import make_server

    users = [oidc_provider_mock.User(sub=OBSERVER, claims={"email": OBSERVER, "name": "Olga"})]
    server = make_server(
        "127.0.0.1", free_port(), oidc_provider_mock.app(user_claims=users), threaded=True
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=5)


def secrets_toml(app_url: str, provider_url: str) -> str:
    return f"""
[auth]
redirect_uri = "{app_url}/oauth2callback"
cookie_secret = "a-cookie-secret-for-this-test-only"
client_id = "conversation-rooms"
client_secret = "a-client-secret-for-this-test-only"
server_metadata_url = "{provider_url}/.well-known/openid-configuration"

[roles]
moderator = ["mo@lab.org"]
default = "observer"
"""


@pytest.fixture
def signed_server(chromium_path: str, tmp_path: Path, provider: str) -> Iterator[AppServer]:
    server = AppServer(tmp_path / "signed")
    settings = server.folder / "home" / ".streamlit"
    settings.mkdir(parents=True)
    # Streamlit reads ~/.streamlit/secrets.toml (and the working directory's); HOME is the
    # server's own temporary folder, so nothing of the developer's is used or touched.
    (settings / "secrets.toml").write_text(secrets_toml(server.url, provider))
    yield server
    server.stop()


def test_an_observer_signs_in_and_can_read_but_not_post_or_approve(
    signed_server: AppServer, browser
) -> None:  # type: ignore[no-untyped-def]
    db = signed_server.database()
    draft = rooms.draft_from_template(MUG_NEGOTIATION, moderated=True)
    room = rooms.create_room(db, draft, opening=MUG_NEGOTIATION.opening)
    room.run()
    pending = room.pending()
    assert pending is not None and pending.state == "waiting"
    signed_server.start()

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(20_000)
    page = context.new_page()
    try:
        # Before sign-in: the sign-in button only, whatever the URL asks for.
        page.goto(f"{signed_server.url}/room?room={room.id}")
        page.get_by_role("button", name="Sign in").wait_for()
        idle(page)
        assert page.get_by_test_id("stSidebarNavLink").count() == 0
        assert MUG_NEGOTIATION.opening not in page.inner_text("body")
        assert page.get_by_test_id("stChatInputTextArea").count() == 0

        # The provider's own login form, then back to the app.
        page.get_by_role("button", name="Sign in").click()
        page.get_by_placeholder("sub").fill(OBSERVER)
        page.get_by_role("button", name="Authorize").click()
        page.get_by_test_id("stSidebarNavLink").first.wait_for()
        wait_text(page, f"Signed in as {OBSERVER} (observer)")

        # The room: readable, nothing to act with.
        page.goto(f"{signed_server.url}/room?room={room.id}")
        wait_text(page, "waits for a moderator")
        wait_text(page, MUG_NEGOTIATION.opening.split("\n")[0][:40])
        wait_text(page, "cannot post messages")  # drawn with the chat box, at the very end
        box = page.get_by_test_id("stChatInputTextArea")
        box.wait_for()
        idle(page)
        assert box.count() == 1 and box.is_disabled()
        assert page.get_by_role("button", name="Approve").count() == 0
        assert page.get_by_role("button", name="Deny").count() == 0
        for name in ("Pause", "Stop", "Pass"):
            assert page.get_by_role("button", name=name, exact=True).is_disabled()
    finally:
        context.close()

    # The engine refuses the same person (the actor the app builds from the same settings).
    actor = RoleTable.from_settings(ROLES).actor(OBSERVER, "Olga")
    assert actor is not None
    logged = len(room.events())
    with pytest.raises(PermissionDenied):
        room.post("let me in", speaker="olga", actor=actor)
    with pytest.raises(PermissionDenied):
        pending.approve(actor=actor)
    assert room.pending().state == "waiting" and len(room.events()) == logged
    assert "Traceback" not in signed_server.log()
    db.dispose()
