"""The Experiments page: the template-room picker finds any room by a search (name or
#id) with a bounded list, and the progress table names each room's condition by its short name,
in the conditions' stable order."""

from __future__ import annotations

import storage
from storage import Database
from tests.app.page_support import app, mug_room
from ui import experiments as ex
from ui.room.templates import MUG_NEGOTIATION

OTHER_ROOMS = 120  # more than the picker lists at once


def test_the_template_room_picker_finds_any_room_by_name_or_id(db: Database) -> None:
    needle = mug_room(db, name="Needle study")
    config = storage.get_room(db, needle.id).config
    for i in range(OTHER_ROOMS):
        storage.create_room(db, f"filler {i}", config)
    at = app("pages/experiments.py")
    at.radio(key="exp-src").set_value("An existing room").run()
    assert not at.exception
    options = at.selectbox(key="exp-room").options
    assert len(options) <= 100  # bounded
    assert f"#{needle.id} Needle study" not in options  # the oldest room, past the newest 100
    assert any("search to find others" in c.value for c in at.caption)

    at.text_input(key="exp-room-find").input("needle").run()
    assert at.selectbox(key="exp-room").options == [f"#{needle.id} Needle study"]
    assert at.selectbox(key="exp-room").value == needle.id
    assert not at.exception
    assert at.text_area(key=f"exp-opening-room-{needle.id}").value == needle.events()[0].content

    at.text_input(key="exp-room-find").input(f"#{needle.id}").run()
    assert at.selectbox(key="exp-room").options == [f"#{needle.id} Needle study"]

    at.text_input(key="exp-room-find").input("no such room anywhere").run()
    assert any("No room matches" in i.value for i in at.info)


def test_the_progress_table_names_conditions_by_short_name_in_design_order(db: Database) -> None:
    template = ex.template_from_room_template(MUG_NEGOTIATION)
    conditions = [
        ex.Condition("zz: the seller is hostile", {"Seller": {"mood": "hostile"}}).named("hostile"),
        ex.Condition("aa: the seller is friendly", {"Seller": {"mood": "friendly"}}),
    ]
    derived = ex.short_names(conditions)[1]  # the second one's short name is derived
    experiment_id = ex.create(db, "moods", ex.design(template, conditions, 2))
    at = app("pages/experiments.py", experiment=str(experiment_id))
    [table] = [d.value for d in at.dataframe if "replicate" in d.value.columns]
    assert list(table["condition"]) == ["hostile", "hostile", derived, derived]
    reps = list(table["replicate"])
    assert reps[0] < reps[1] and reps[2] < reps[3]  # replicates in order within a condition
    rooms_by_id = {r.id: r.condition for r in storage.list_rooms(db, experiment_id=experiment_id)}
    assert [rooms_by_id[int(r)] for r in table["room_id"]] == [
        c.label for c in conditions for _ in (1, 2)
    ]
