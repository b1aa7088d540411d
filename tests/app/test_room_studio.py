"""The Room page's editing tools: the edit-settings form applies a new version, a fork
with an edited message creates a paused branch, the branch tree lists the family, two branches
compare side by side, the turn details say why a speaker was chosen, and the page's pickers live
in fragments (a widget change reruns its panel only)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import storage
from conversation.rooms.room import Room
from storage import Database
from tests.app.page_support import app, mug_room, open_section
from tests.app.page_support import shown as shown_text
from ui.room import branches, details, editing

ROOT = Path(__file__).resolve().parents[2]


def test_the_settings_form_applies_a_new_version(db: Database) -> None:
    room = mug_room(db)
    at = open_section(app("pages/room.py", room=str(room.id)), "Settings", key="room-section")
    key = f"edit-{room.id}-v1"
    assert at.button(key=f"{key}-apply").disabled  # nothing changed yet
    at.checkbox(key=f"{key}-mod").check().run()
    at.multiselect(key=f"{key}-bp-before").select("Seller").run()
    at.button(key=f"{key}-apply").click().run()
    assert not at.exception
    again = Room.open(db, room.id)
    assert again.config.moderated is True
    assert again.config.breakpoints_of("before") == ("Seller",)
    [change] = [e.data for e in again.events() if (e.data or {}).get("event") == "config_changed"]
    assert change["version"] == 2 and change["by"] == "user"
    assert sorted(change["changes"]) == ["breakpoints", "moderated"]
    assert any("Settings applied" in w.value for w in at.warning)
    # The form is drawn afresh from version 2.
    assert at.checkbox(key=f"edit-{room.id}-v2-mod").value is True


def test_a_bad_setting_is_refused_with_the_reason(db: Database) -> None:
    room = mug_room(db)
    at = open_section(app("pages/room.py", room=str(room.id)), "Settings", key="room-section")
    key = f"edit-{room.id}-v1"
    at.text_area(key=f"{key}-prompt").set_value("{{ undefined_variable }}").run()
    at.button(key=f"{key}-apply").click().run()
    assert any("Not applied" in e.value for e in at.error)
    assert len(Room.open(db, room.id).config_versions()) == 1


def test_fork_with_an_edited_message_creates_a_paused_branch(db: Database) -> None:
    room = mug_room(db)
    room.run(max_turns=2)
    at = open_section(app("pages/room.py", room=str(room.id)), "Fork & export", key="room-section")
    at.selectbox(key=f"fork-at-{room.id}").set_value(2).run()
    at.text_area(key=f"fork-text-{room.id}-2").set_value("I offer $2, take it or leave it.").run()
    assert at.button(key=f"fork-{room.id}").label == "Fork with these changes"
    at.button(key=f"fork-{room.id}").click().run()
    assert not at.exception
    fork = Room.open(db, max(r.id for r in storage.list_rooms(db)))
    assert fork.record.parent_room_id == room.id and fork.status == "paused"
    assert fork.events()[1].content == "I offer $2, take it or leave it."
    assert fork.events()[-1].data["edited"] is True
    assert at.query_params["room"] in (str(fork.id), [str(fork.id)])
    assert any("press Resume" in w.value for w in at.warning)  # drawn on the branch's page


def test_the_branch_tree_and_the_side_by_side_compare(db: Database) -> None:
    room = mug_room(db)
    room.run(max_turns=3)
    edited = room.fork(2, edit="Five dollars, final offer.", by="ann")
    plain = room.fork(3)
    grandchild = edited.fork(2)
    at = open_section(app("pages/room.py", room=str(edited.id)), "Branches", key="room-section")
    tree = [t.value.strip() for t in at.text]
    for branch in (room, edited, plain, grandchild):
        assert any(f"#{branch.id} {branch.name} (" in line for line in tree)
    assert f"└ ▶ #{edited.id} {edited.name} (paused), forked at #2" in tree  # the one shown now
    assert f"└ #{grandchild.id} {grandchild.name} (not started), forked at #2" in tree
    at.selectbox(key=f"branch-open-{edited.id}").set_value(grandchild.id).run()
    at.button(key=f"branch-go-{edited.id}").click().run()
    assert at.query_params["room"] in (str(grandchild.id), [str(grandchild.id)])

    at = app("pages/room.py", room=str(edited.id))
    assert at.selectbox(key=f"cmp-a-{edited.id}").value == edited.id
    assert at.selectbox(key=f"cmp-b-{edited.id}").value == room.id  # its parent by default
    shown = [t.value for t in at.text]
    original = room.events()[1].content
    # Aligned by message, across the page: a row is "#seq ≠|=", branch A's line, branch B's.
    row = shown.index("#2 ≠")
    assert shown[row + 1] == "Buyer: Five dollars, final offer."
    assert shown[row + 2] == f"Buyer: {original}"
    captions = [shown_text(c.value) for c in at.caption]
    assert any(c.startswith("From message #2, where the two branches diverge:") for c in captions)


def test_turn_details_say_why_the_speaker_was_chosen(db: Database) -> None:
    room = mug_room(db)
    room.run(max_turns=1)
    at = app("pages/room.py", room=str(room.id))
    assert any("round robin" in t.value for t in at.text)  # the turn's facts


def _fragment(function: object) -> bool:
    code = getattr(function, "__code__", None)
    return code is not None and code.co_filename.endswith("fragment.py")


def test_the_room_page_panels_are_fragments() -> None:
    panels = [
        details.turn_details_panel,
        details.prompt_preview,
        editing.settings_editor,
        branches.fork_panel,
        branches.branch_tree,
        branches.compare_branches,
    ]
    assert all(_fragment(p) for p in panels)
    # In the page, the tabs hold no widget of their own: every picker is inside a panel above.
    tree = ast.parse((ROOT / "pages" / "room.py").read_text())
    widgets = {"selectbox", "multiselect", "checkbox", "radio", "text_input", "text_area", "button"}
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and any(
            isinstance(item.context_expr, ast.Name) and item.context_expr.id.endswith("_tab")
            for item in node.items
        ):
            called = {
                n.func.attr
                for n in ast.walk(node)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            }
            assert not called & widgets, called & widgets


def test_fork_giving_a_message_to_another_agent(db: Database) -> None:
    room = mug_room(db)
    room.run(max_turns=1)
    at = open_section(app("pages/room.py", room=str(room.id)), "Fork & export", key="room-section")
    at.selectbox(key=f"fork-at-{room.id}").set_value(2).run()
    at.selectbox(key=f"fork-speaker-{room.id}-2").set_value("Seller").run()
    at.button(key=f"fork-{room.id}").click().run()
    assert not at.exception
    fork = Room.open(db, max(r.id for r in storage.list_rooms(db)))
    assert fork.events()[1].speaker == "Seller" and fork.status == "paused"
    assert fork.events()[1].data["forked_from"]["speaker"] == "Buyer"


def test_the_settings_form_changes_the_request_settings(db: Database) -> None:
    room = mug_room(db)
    at = open_section(app("pages/room.py", room=str(room.id)), "Settings", key="room-section")
    key = f"edit-{room.id}-v1"
    at.number_input(key=f"{key}-request-max-output").set_value(321).run()
    at.button(key=f"{key}-apply").click().run()
    assert not at.exception
    again = Room.open(db, room.id)
    assert again.config.max_output_tokens == 321
    change = again.events()[-1].data
    assert change["event"] == "config_changed" and change["changes"] == ["max_output_tokens"]


def test_a_planner_the_form_does_not_offer_is_kept(db: Database) -> None:
    from conversation.planning.coordinator import CoordinatorPolicy

    room = Room.create(
        db,
        name="coordinated",
        agents=[{"name": "Mo"}, {"name": "Ann"}, {"name": "Bo"}],
        planner=CoordinatorPolicy("Mo"),
    )
    at = open_section(app("pages/room.py", room=str(room.id)), "Settings", key="room-section")
    assert any("Turn taking: coordinator (kept as it is" in t.value for t in at.text)
    at.checkbox(key=f"edit-{room.id}-v1-mod").check().run()
    at.button(key=f"edit-{room.id}-v1-apply").click().run()
    again = Room.open(db, room.id)
    assert again.config.moderated is True and again.config.planner["kind"] == "coordinator"


def test_branches_are_compared_aligned_by_what_the_messages_are() -> None:
    """Issue 19: the comparison was two narrow columns whose messages did not line up. Issue 35:
    aligned by message number, a fork's own notice shifted every later message ("22 of 23
    messages differ" for branches that differ only from #3). Rows face the messages that are
    the same; what only one branch has faces "" (shown as "(no message)")."""
    from types import SimpleNamespace

    from ui.room.branches import comparison_rows, row_label

    def E(**row: object) -> SimpleNamespace:  # noqa: N802 - an event row, as stored
        return SimpleNamespace(**({"round": 0, "visible_to": None, "data": None} | row))

    left = [
        E(seq=1, kind="human", speaker="ann", content="hi", state=None),
        E(seq=2, kind="agent", speaker="A", content="same", state="done"),
        E(seq=3, kind="agent", speaker="B", content="left only", state="done"),
    ]
    right = [
        E(seq=1, kind="human", speaker="ann", content="hi", state=None),
        E(seq=2, kind="agent", speaker="A", content="same", state="done"),
        E(seq=3, kind="agent", speaker="B", content="", state="running"),  # in flight: no line
        E(seq=4, kind="system", speaker="room", content="Paused by ann.", state=None),
    ]
    assert comparison_rows(left, right, 2) == [
        (2, 2, "A: same", "A: same", False),
        (3, 4, "B: left only", "[Paused by ann.]", True),
    ]
    # a fork at #3: its notice, then the same continuation one number later
    original = [
        E(seq=3, kind="agent", speaker="B", content="nine", state="done"),
        E(seq=4, kind="agent", speaker="A", content="eight", state="done"),
        E(seq=5, kind="agent", speaker="B", content="DEAL", state="done"),
    ]
    fork = [
        E(seq=3, kind="agent", speaker="B", content="nine", state="done"),
        E(seq=4, kind="system", speaker="room", content="Forked from #3.", state=None),
        E(seq=5, kind="agent", speaker="A", content="eight", state="done"),
        E(seq=6, kind="agent", speaker="B", content="DEAL", state="done"),
    ]
    rows = comparison_rows(fork, original, 3)
    assert [r[4] for r in rows] == [False, True, False, False]  # one row differs, not three
    assert rows[1] == (4, None, "[Forked from #3.]", "", True)
    assert [row_label(r) for r in rows] == ["#3 =", "#4 / #- ≠", "#5 / #4 =", "#6 / #5 ="]


def test_the_turn_details_show_an_agents_hand(db: Database) -> None:
    """Issue 33: a hand-raising turn's decision (raised or not, its reason, ready to end, who
    decided) is in the Room page's turn details."""
    import json

    from edsl import Agent, AgentList

    from conversation.models import OfflineModel
    from conversation.planning.planner import RoundRobinRoomPlanner
    from tests.support.room_common import drive_with

    room = Room.create(
        db,
        name="hands",
        agents=AgentList([Agent(name="Mediator")]),
        planner=RoundRobinRoomPlanner(max_rounds=1),
        model=OfflineModel(seed=3, mention_probability=0),
        agent_rules={"hand_raising": True},
    )
    said = {"should_respond": False, "reason": "nothing to add yet", "ready_to_end": True}
    drive_with(room, OfflineModel(func=lambda *a, **k: json.dumps(said)))
    room.post("rate test 3")
    room.run(2)
    at = app("pages/room.py", room=str(room.id))
    assert not at.exception
    facts = "\n".join(t.value for t in at.text)
    assert re.search(r"hand raised +no \(stayed silent\)", facts), facts
    assert re.search(r"hand reason +nothing to add yet", facts)
    assert re.search(r"ready to end +yes", facts)
    assert re.search(r"decided by +its model", facts)
