"""The Results page's analysis section offers to retry the failed answers, and plans them for
the background runner, which asks them again."""

from __future__ import annotations

import storage
from conversation.worker import AnalysisRunner
from storage import Database
from tests.app.conftest import db  # noqa: F401 - a fixture
from tests.app.page_support import app, mug_room, open_section
from ui.results import tables


def test_the_retry_button_asks_the_failed_rooms_again(db: Database) -> None:  # noqa: F811
    rooms = [mug_room(db) for _ in range(2)]
    for room in rooms:
        room.run()
    spec = {"service": "test", "model": "test", "parameters": {"canned_response": "unsure"}}
    question = {"type": "yes_no", "name": "answer", "text": "Was a deal reached?"}
    analysis_id = tables.run_analysis(db, question, [r.id for r in rooms], model=spec)
    assert len(tables.failed_answers(db, analysis_id)) == 2
    at = open_section(app("pages/results.py"), "Analysis")
    assert any("2 answer(s) failed" in w.value for w in at.warning)
    at.button(key="an-retry").click().run()
    assert not at.exception
    assert any("2 failed answer(s) are being asked again" in s.value for s in at.success)
    assert tables.failed_answers(db, analysis_id) == []  # planned again, not asked yet
    AnalysisRunner(db).run(until_idle=True)
    at.run()
    assert any("2 answer(s) failed" in w.value for w in at.warning)  # the canned reply again
    assert all(a.error["raw"] == "unsure" for a in storage.answers(db, analysis_id))
