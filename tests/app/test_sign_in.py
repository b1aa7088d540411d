"""Sign-in and roles in the pages, through AppTest with a seeded ``st.user`` (``AppTest.user``)
and an ``[auth]`` section in ``AppTest.secrets``: nothing is drawn before sign-in, an observer
gets no working control (and a short note why), a moderator's acts record their e-mail, and
without ``[auth]`` the app is the local single user as before."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from conversation.rooms.room import Room
from storage import Database
from tests.app.page_support import open_section
from tests.app.sign_in_support import APP, AUTH, ROLES, plain, signed_in_app, user
from ui.room import rooms
from ui.room.templates import MUG_NEGOTIATION


def waiting_room(db: Database) -> Room:
    draft = rooms.draft_from_template(MUG_NEGOTIATION, moderated=True)
    room = rooms.create_room(db, draft, opening=MUG_NEGOTIATION.opening, request_id="open-1")
    room.run()
    assert room.status == "waiting"
    return room


def labels(at: AppTest) -> list[str]:
    return [b.label for b in at.button]


def test_nothing_but_the_sign_in_buttons_before_sign_in(db: Database) -> None:
    room = waiting_room(db)
    at = signed_in_app({"is_logged_in": False}, "pages/room.py", room=str(room.id))
    assert labels(at) == ["Sign in", "Sign in with Keycloak"]
    assert [t.value for t in at.title] == ["Conversation rooms"]
    assert not at.chat_input and not at.sidebar.children  # no page, no sidebar
    assert MUG_NEGOTIATION.opening not in str(at)  # no transcript either


def test_a_signed_in_address_without_a_role_is_turned_away(db: Database) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets["auth"] = AUTH
    at.secrets["roles"] = {**ROLES, "default": "none"}
    at.user = user("stranger@else.org")
    at.run()
    assert "has no role here" in plain(at)
    assert labels(at) == ["Sign out"]


def test_an_observer_reads_the_room_but_has_no_working_control(db: Database) -> None:
    room = waiting_room(db)
    at = signed_in_app(user("olga@lab.org", "Olga"), "pages/room.py", room=str(room.id))
    draft = room.pending()
    assert draft is not None
    assert "Signed in as olga@lab.org (observer)" in plain(at)
    assert any(m.name == "user" for m in at.chat_message)  # the transcript is shown
    assert at.chat_input[0].disabled
    for key in ("ctl-resume", "ctl-pause", "ctl-stop", "ctl-pass"):
        assert at.button(key=key).disabled
    assert f"approve-{draft.id}-0" not in [b.key for b in at.button]
    assert "cannot post messages; it needs the moderator role" in plain(at)
    assert "cannot approve, edit, deny or pass agent turns" in plain(at)


def test_an_observer_cannot_create_rooms_or_change_agents(db: Database) -> None:
    at = signed_in_app(user("olga@lab.org"), "pages/room.py")
    assert "cannot create, import or fork rooms" in plain(at)
    assert "Create room" not in labels(at)
    at = signed_in_app(user("olga@lab.org"), "pages/agents.py")
    assert at.button(key="save-new").disabled
    home = signed_in_app(user("olga@lab.org"))
    assert all(b.disabled for b in home.button if b.label == "Start")


def test_a_moderator_approves_and_the_decision_records_their_email(db: Database) -> None:
    room = waiting_room(db)
    at = signed_in_app(user("mo@lab.org", "Mo"), "pages/room.py", room=str(room.id))
    draft = room.pending()
    assert draft is not None and not at.chat_input[0].disabled
    at.button(key=f"approve-{draft.id}-0").click().run()
    assert not at.exception
    decided = room.turn(draft.id)
    assert decided.state == "done"
    assert decided.event.data["decisions"][-1]["by"] == "mo@lab.org"
    at.chat_input[0].set_value("Keep it short.").run()
    posted = [e for e in room.events() if e.kind == "human"][-1]
    assert (posted.speaker, posted.content, posted.data["by"]) == (
        "mo",
        "Keep it short.",
        "mo@lab.org",
    )
    open_section(at, "Fork & export", key="room-section")
    assert "cannot create, import or fork rooms" in plain(at)  # forking needs a researcher


def test_without_auth_settings_the_local_user_has_every_control(db: Database) -> None:
    room = waiting_room(db)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/room.py")
    at.query_params["room"] = str(room.id)
    at.run()
    draft = room.pending()
    assert draft is not None
    assert not at.chat_input[0].disabled and not at.button(key="ctl-stop").disabled
    assert "Sign out" not in labels(at) and "Signed in as" not in plain(at)
    at.button(key="ctl-stop").click().run()
    assert room.status == "stopped"
    assert room.events()[-1].data == {
        "event": "stopped",
        "reason": "stopped by a person",
        "by": "user",
    }
