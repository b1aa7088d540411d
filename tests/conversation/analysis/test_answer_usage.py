"""Tokens and cost per analysis answer (issue 24): each stored answer records what its call
used; a self-hosted server's price is unknown (None), never $0."""

from __future__ import annotations

import storage
from conversation import Room
from conversation.analysis.runs import run_analysis
from storage import Database
from tests.support.openai_server import OpenAICompatibleServer, Reply


def test_each_answer_records_its_tokens_and_an_unknown_price(db: Database) -> None:
    rooms = []
    for i in range(2):
        room = Room.create(db, name=f"r{i}", agents=[{"name": "Ann"}])
        room.post("We agreed on $7. DEAL.")
        rooms.append(room.id)
    spec = {"type": "yes_no", "name": "answer", "text": "Was a deal reached?"}
    with OpenAICompatibleServer(default_text="Yes") as server:
        server.script(Reply(text="Yes", prompt_tokens=120, completion_tokens=3))
        model = {"service": "openai_compatible", "model": "tiny", "base_url": server.base_url}
        analysis_id = run_analysis(db, spec, rooms, model=model)
    answers = storage.answers(db, analysis_id)
    assert sorted(a.answer for a in answers) == ["Yes", "Yes"]
    assert sorted(a.input_tokens for a in answers) == [11, 120]
    assert sorted(a.output_tokens for a in answers) == [3, 7]
    assert all(a.cost is None for a in answers)  # self-hosted: no known price
