"""The Results page asks an analysis in the background (issue 24): "Run analysis" returns with
the analysis stored and none of its answers yet, the page shows how far it is, and the answers
appear once a runner has asked them; a failed answer is retried the same way, and its success
makes the analysis done."""

from __future__ import annotations

import pytest

import conversation.models as models
import storage
from conversation.analysis import progress_of
from conversation.models import OfflineModel
from conversation.worker import AnalysisRunner
from storage import Database
from tests.app.conftest import db  # noqa: F401 - a fixture
from tests.app.page_support import app, mug_room, open_section

RUN = "FormSubmitter:analysis-form-Run analysis"


def label_of(at, key: str) -> str:  # type: ignore[no-untyped-def]
    box = at.selectbox(key=key)
    return str(box.format_func(box.value))


def answer_with(monkeypatch: pytest.MonkeyPatch, replies: list[str]) -> None:
    """Every analysis job in this process answers with the next of ``replies`` (the last one
    then stays)."""

    def reply(user_prompt: str, system_prompt: str) -> str:
        return replies.pop(0) if len(replies) > 1 else replies[0]

    monkeypatch.setattr(models, "resolve_model", lambda spec, **kw: OfflineModel(func=reply))


def test_run_returns_at_once_and_the_answers_appear_after_the_runner(
    db: Database,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer_with(monkeypatch, ["Yes"])
    rooms = [mug_room(db) for _ in range(3)]
    for room in rooms:
        room.run()
    at = open_section(app("pages/results.py"), "Analysis")
    at.button(key=RUN).click().run()
    assert not at.exception
    (analysis,) = storage.list_analyses(db)
    assert progress_of(db, analysis.id).planned == 3  # stored, nothing asked yet
    assert all(a.answer is None and a.state == "planned" for a in storage.answers(db, analysis.id))
    assert any(f"Analysis #{analysis.id} started: 3 room(s)" in s.value for s in at.success)
    assert label_of(at, "an-pick").endswith("(running)")
    assert [p.proto.text for p in at.get("progress")] == ["0 of 3 answered, 3 still being asked"]
    table = at.dataframe[-1].value
    assert list(table["state"]) == ["planned"] * 3 and table["answer"].isna().all()

    AnalysisRunner(db).run(until_idle=True)
    at.run()
    assert not at.exception
    assert label_of(at, "an-pick").endswith("(done)")
    assert not at.get("progress")
    assert any(c.value == "3 of 3 answered" for c in at.caption)
    table = at.dataframe[-1].value
    assert list(table["answer"]) == ["Yes"] * 3 and list(table["state"]) == ["answered"] * 3


def test_a_failed_answer_is_retried_in_the_background(
    db: Database,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer_with(monkeypatch, ["maybe", "Yes"])  # the first job's reply is refused
    room = mug_room(db)
    room.run()
    at = open_section(app("pages/results.py"), "Analysis")
    at.button(key=RUN).click().run()
    AnalysisRunner(db).run(until_idle=True)
    at.run()
    (analysis,) = storage.list_analyses(db)
    assert label_of(at, "an-pick").endswith("(done with 1 failed)")
    assert any("1 answer(s) failed" in w.value for w in at.warning)
    at.button(key="an-retry").click().run()
    assert not at.exception
    assert any("1 failed answer(s) are being asked again" in s.value for s in at.success)
    assert storage.get_analysis(db, analysis.id).status == "running"
    AnalysisRunner(db).run(until_idle=True)
    at.run()
    assert label_of(at, "an-pick").endswith("(done)")
    assert storage.get_analysis(db, analysis.id).status == "done"
    assert not any("answer(s) failed" in w.value for w in at.warning)
