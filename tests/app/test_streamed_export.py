"""Results' whole-experiment exports: prepared into a file under a progress bar, then offered
for download; the file holds every room of the experiment, whatever the table shows."""

from __future__ import annotations

import json
from pathlib import Path

import storage
from storage import Database
from storage.research import frames
from tests.app.page_support import app, open_section
from tests.support.room_logs import room_config, room_log


def _experiment(db: Database) -> tuple[int, list[int]]:
    planned = [
        storage.ExperimentRoom(name=f"room {n}", config=room_config(), condition="c", replicate=n,
                               opening="Negotiate the mug.", speaker="user", request_id=f"r{n}")
        for n in (3, 4)
    ]  # fmt: skip
    experiment = storage.create_experiment(db, "big study", status="done", rooms=planned)
    ids = storage.room_ids(db, experiment_id=experiment)
    for room_id, n in zip(ids, (3, 4), strict=True):
        storage.rooms.import_events(db, room_id, room_log(n)[1:])  # after the opening
    return experiment, ids


def test_an_experiment_export_is_written_with_progress_then_offered(db: Database) -> None:
    experiment, ids = _experiment(db)
    at = open_section(app("pages/results.py", experiment=str(experiment)), "Export")
    assert not [b for b in at.get("download_button") if b.proto.label.startswith("Download ")]

    at.button(key="xp-events-csv-prepare").click().run()
    assert not at.exception, at.exception
    bars = [p.proto for p in at.get("progress")]
    assert bars and bars[-1].value == 100 and "written" in bars[-1].text
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download events (CSV)" in labels
    path = Path(at.session_state["xp-events-csv-file"])
    assert path.read_text(encoding="utf-8") == frames.events_frame(db, ids).to_csv(index=False)

    at.button(key="xp-edsl-prepare").click().run()
    assert not at.exception, at.exception
    written = json.loads(Path(at.session_state["xp-edsl-file"]).read_text(encoding="utf-8"))
    assert len(written["data"]) == 2 + 3  # every agent message of both rooms
    assert path.exists()  # the other kind's file is kept
