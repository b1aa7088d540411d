"""A judge panel with a real (weak) model: SmolLM2-135M-Instruct scores a two-dimension rubric on a
small experiment, and its agreement with a seeded set of human codes is computed.

What must hold even with a 135M model: every (unit, dimension) ends with a score on the scale or
a recorded failure (never silently missing), a retry asks only the failures, the agreement table
between the coders and the judge has an estimate (or an undefined value with its reason), an
interval and n for every pair, and a forced re-run is answered by the model cache. What the
model says is not judged.
"""

from __future__ import annotations

import math
import time

import pytest

import storage
from conversation.analysis import coding, judges
from conversation.analysis.judges.raters import ratings
from conversation.analysis.judges.rubrics import Rubric
from conversation.analysis.judges.tables import agreement
from storage import Database

pytestmark = pytest.mark.llm

MESSAGES = {
    "calm": ["I can lower my price to 8 dollars.", "Would 7 work for you?"],
    "tense": ["Pay 12 now or I walk away.", "That is my final offer."],
}
ANN = {"lower": "concession", "7": "concession", "walk": "threat", "final": "threat"}
BOB = {"lower": "concession", "7": "question", "walk": "threat"}  # "final" left untagged


@pytest.fixture
def db(db_url: str) -> Database:
    return Database(db_url)


def _study(db: Database) -> tuple[int, list[int]]:
    experiment = storage.create_experiment(db, "judged", {})
    for label in ("concession", "threat", "question"):
        coding.add_label(db, label, experiment_id=experiment)
    rooms = []
    for condition, texts in MESSAGES.items():
        room = storage.create_room(
            db, condition, {"roster": []}, experiment_id=experiment, condition=condition
        )
        for text in texts:
            event = storage.append_message(db, room, "human", "user", text)
            for coder, codes in (("ann", ANN), ("bob", BOB)):
                code = next((c for word, c in codes.items() if word in text), None)
                if code is not None:
                    coding.tag_message(db, event.id, code, by=coder)
        rooms.append(room)
    return experiment, rooms


def _rubric(db: Database, experiment: int) -> Rubric:
    book = Rubric.from_codebook(
        "moves", coding.codebook(db, experiment_id=experiment), none_label="none"
    )
    warmth = {
        "name": "warmth",
        "description": "How friendly is the message?",
        "scale": {"kind": "ordinal", "points": 3},
        "anchors": {1: "hostile", 2: "neutral", 3: "friendly"},
    }
    return Rubric.from_dict({**book.to_dict(), "dimensions": [*book.to_dict()["dimensions"], warmth]})  # fmt: skip


def test_smollm2_judges_a_two_dimension_rubric_against_seeded_human_codes(db, smollm2) -> None:
    experiment, rooms = _study(db)
    rubric = _rubric(db, experiment)
    judge = judges.Judge("smollm2", {**smollm2, "parameters": {"max_tokens": 24}})
    started = time.perf_counter()
    run = judges.run_judges(db, rubric, [judge], rooms, experiment_id=experiment)
    elapsed = time.perf_counter() - started
    stored = storage.judge_scores(db, rubric_id=run.rubric_id)
    assert len(stored) == 4 * 2  # every (unit, dimension): a score or a recorded failure
    for score in stored:
        if score.error is None:
            assert rubric.dimension(score.dimension).contains(score.value)
            assert score.prompt and score.cache_key and score.model["model"] == "smollm2"
        else:
            assert score.value is None and score.error["message"]
    failed = [s for s in stored if s.error is not None]
    retried = judges.retry_failed_scores(db, run.run_id)
    assert retried.asked - run.asked == len(failed)  # the failures alone were asked again

    table = agreement(db, run.rubric_id, "code", n_boot=200, seed=1)
    assert {"human:ann", "human:bob"} <= set(table.raters)
    assert table.pair("human:ann", "human:bob").n_units == 4
    for result in table.pairs.values():  # a number with its interval, or a reason
        assert not math.isnan(result.estimate) or result.reason
    valid = [s for s in ratings(db, run.rubric_id, "code") if s.rater == "smollm2"]
    if valid:
        assert table.pair("smollm2", "human:ann").n_units == len(valid)

    answered = len(storage.judge_scores(db, rubric_id=run.rubric_id, failed=False))
    again = judges.run_judges(db, rubric, [judge], rooms, experiment_id=experiment, rescore=True)
    assert again.cached >= answered  # every score answered before: from the model cache
    print(f"\nsmollm2 judge: {run.asked} scores in {elapsed:.1f} s, {run.failed} failed; "
          f"agreement {table.pair('human:ann', 'human:bob').describe()}")  # fmt: skip
