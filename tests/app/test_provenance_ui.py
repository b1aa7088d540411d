"""The transcript's provenance marks and the coding UI through AppTest (Room and Results)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from streamlit.testing.v1 import AppTest

from conversation.analysis import coding
from storage import Database
from tests.app.page_support import open_coding, open_section
from tests.support.provenance_room import studied_room
from ui.room import provenance

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "streamlit_app.py")  # the script app.py serves


def shown(markdown: str) -> str:
    """What the browser shows for a Markdown value the app escaped."""
    literal = re.sub(r"\\(.)", r"\1", markdown.replace("&#58;", ":").replace("\u2060", ""))
    return literal.replace("  \n", "\n")


def app(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(page)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_transcript_marks_private_messages_decisions_picks_and_passes(db: Database) -> None:
    room = studied_room(db)
    at = app("pages/room.py", room=str(room.id))
    captions = [shown(c.value) for c in at.caption]
    assert any("private to Bob" in c for c in captions)
    assert any("Alice picked Bob to speak next." in c for c in captions)
    assert any(re.search(r"denied by mod at \d\d:\d\d:\d\d UTC", c) for c in captions)
    assert any("edited and approved by mod" in c for c in captions)
    assert any(c.startswith("Cara passed") for c in captions)
    expanders = {shown(e.label): [t.value for t in e.text] for e in at.expander}
    assert expanders["Original draft (edited by mod)"] == ["a draft, attempt 2"]
    assert expanders["Denied drafts (1)"] == ["Draft: a draft, attempt 1\nDenied by mod: too long"]
    # The edited text is the message; the original draft is only behind the click.
    bodies = [m.text[0].value for m in at.chat_message]
    assert "Short and edited." in bodies and "a draft, attempt 2" not in bodies


def row(**fields: Any) -> SimpleNamespace:
    """A stored event as the provenance marks read it (the columns a log entry is made of)."""
    return SimpleNamespace(**({"seq": 1, "content": "", "round": 0, "state": None} | fields))


def test_marks_show_why_the_speaker_was_chosen_cache_hits_and_who_acted() -> None:
    event = row(
        kind="agent",
        speaker="Cara",
        visible_to=None,
        data={
            "chosen_because": "mentioned by Ana",
            "cache_hit": True,
            "candidates": [
                {"speaker": "Bob", "text": "mine", "passed": False, "chosen": False},
                {"speaker": "Cara", "text": "hers", "passed": False, "chosen": True},
            ],
            "picked": "Cara",
            "picked_by": "ann",
        },
    )
    assert provenance.marks(event) == [
        "why Cara: mentioned by Ana",
        "draft picked by ann",
        "from the model cache",
    ]
    assert provenance.one_click_texts(event) == [("Drafts not chosen (1)", ["Bob: mine"])]
    waiting = row(
        kind="agent",
        speaker="coordinator",
        state="waiting",
        visible_to=None,
        data={"candidates": [{"speaker": "Bob", "text": "mine", "passed": False}]},
    )
    assert provenance.one_click_texts(waiting) == [("Drafts to pick from (1)", ["Bob: mine"])]
    system = row(
        kind="system", speaker="room", visible_to=None, data={"event": "paused", "by": "ann"}
    )
    assert provenance.marks(system) == ["by ann"]
    person = row(kind="human", speaker="Ana", visible_to=["Bob"], data={"by": "ana@x"})
    assert provenance.marks(person) == ["private to Bob", "posted by ana@x"]


def test_a_researcher_tags_a_message_on_the_room_page_and_sees_it_in_results(
    db: Database,
) -> None:
    room = studied_room(db)
    at = open_coding(app("pages/room.py", room=str(room.id)), room.id)
    at.text_input(key=f"code-new-{room.id}").set_value("concession")
    at.button(key=f"FormSubmitter:code-add-{room.id}-Add label").click().run()
    assert coding.codebook(db, room_id=room.id) == ["concession"]
    message = at.selectbox(key=f"code-msg-{room.id}")
    person = next(e for e in room.events() if e.content == "Ideas for the launch?")
    message.set_value(person.id).run()
    at.number_input(key=f"code-rating-{room.id}").set_value(4)
    at.text_input(key=f"code-note-{room.id}").set_value("opens the activity")
    at.button(key=f"code-tag-{room.id}").click().run()
    assert not at.exception, at.exception
    [tag] = coding.tags(db, room_ids=room.id)
    assert (tag.event_id, tag.label, tag.rating, tag.note, tag.by) == (
        person.id, "concession", 4, "opens the activity", "user",
    )  # fmt: skip

    results = open_section(app("pages/results.py"), "Coding")
    assert "Coding" in [s.value for s in results.subheader]
    assert results.multiselect(key="res-tag-filter").options == ["concession"]
    assert any(b.label == "Coding table (CSV)" for b in results.get("download_button"))
