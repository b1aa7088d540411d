"""Judge panels over stored rooms (``conversation.analysis.judges``): every score stored per judge
with what made it, the panel's combined score, re-scoring only what a rubric edit changed, an
unchanged re-run answered by the model cache, failures retried alone, coders as raters."""

from __future__ import annotations

import math

import pytest

import storage
from conversation.analysis import coding, judges
from conversation.analysis.judges.raters import human_ratings, ratings
from conversation.analysis.judges.rubrics import Rubric
from conversation.analysis.judges.tables import (
    agreement,
    by_condition,
    confusion,
    disagreements,
    export_agreement_csv,
    export_scores_csv,
    scores_frame,
)
from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel
from storage import Database

MESSAGES = ["I give up 5 dollars", "Pay or else", "What is your price?"]
CODES = {"give": "concession", "else": "threat", "price": "question"}


def rubric(warmth_points: int = 5) -> Rubric:
    return Rubric(
        name="negotiation",
        unit="message",
        dimensions=[
            {"name": "code", "description": "Which move is this message?",
             "scale": {"kind": "nominal", "labels": ["concession", "threat", "question", "none"]}},
            {"name": "warmth", "description": "How warm is it?",
             "scale": {"kind": "ordinal", "points": warmth_points}},
        ],
    )  # fmt: skip


def judged_message(prompt: str) -> str:
    return prompt.split("The message to judge (in the same form):\n", 1)[1].split("\n", 1)[0]


def reply(prompt: str, system: str) -> str:
    """A judge that codes by keyword and rates warmth 4, its reason on the next line."""
    message = judged_message(prompt)
    if "Rate it from 1 (lowest)" in prompt:
        return "4\nThe message says so."
    code = next((code for word, code in CODES.items() if word in message), "none")
    return f"{code}\nThe message says so."


@pytest.fixture
def db(db_url: str) -> Database:
    return Database(db_url)


@pytest.fixture
def experiment(db: Database) -> int:
    experiment_id = storage.create_experiment(db, "e", {})
    for label in ("concession", "threat", "question"):
        coding.add_label(db, label, experiment_id=experiment_id)
    return experiment_id


@pytest.fixture
def rooms(db: Database, experiment: int) -> list[int]:
    ids = []
    for i in range(2):
        room_id = storage.create_room(
            db, f"r{i}", {"roster": [{"name": "Alice"}, {"name": "Bob"}]},
            experiment_id=experiment, condition=f"c{i}",
        )  # fmt: skip
        for text in MESSAGES:
            storage.append_message(db, room_id, "human", "user", text)
        ids.append(room_id)
    return ids


def panel(model_a: OfflineModel | None = None) -> list[judges.Judge]:
    return [
        judges.Judge("keyword", model_a or OfflineModel(func=reply)),
        judges.Judge("own", OfflineModel(seed=7)),
    ]


def test_each_judge_scores_each_unit_on_each_dimension_with_what_made_it(db, rooms) -> None:
    seen = []
    run = judges.run_judges(db, rubric(), panel(), rooms, progress=lambda d, t: seen.append((d, t)))
    assert (run.asked, run.failed, run.reused, run.status) == (24, 0, 0, "done")  # 6 x 2 x 2
    assert seen[-1] == (24, 24)
    stored = storage.judge_scores(db, rubric_id=run.rubric_id)
    first = next(s for s in stored if s.judge == "keyword" and s.dimension == "code")
    assert first.value == "concession" and first.reason == "The message says so."
    assert "I give up 5 dollars" in first.prompt and "Which move is this message?" in first.prompt
    assert first.rubric_version == rubric().version and len(first.cache_key) == 32
    assert first.model["service"] == "offline" and first.cost == 0.0 and not first.cached
    assert first.dimension_version == rubric().dimension("code").version("message")
    values = {(s.unit, s.rater, s.dimension): s.value for s in judges.scores(db, run.rubric_id)}
    unit = f"{rooms[0]}:2"
    assert values[(unit, "keyword", "code")] == "threat"
    assert values[(unit, "keyword", "warmth")] == 4
    assert (unit, "panel", "code") in values  # the panel's score beside each judge's


def test_an_unchanged_rerun_asks_nothing_and_a_forced_one_comes_from_the_model_cache(
    db, rooms
) -> None:
    first = judges.run_judges(db, rubric(), panel(), rooms)
    again = judges.run_judges(db, rubric(), panel(), rooms)
    assert (again.asked, again.rubric_id) == (0, first.rubric_id)
    model = OfflineModel(func=reply)
    forced = judges.run_judges(db, rubric(), panel(model), rooms, rescore=True)
    assert model.calls == 0  # EDSL answered every call from the stored cache
    assert (forced.asked, forced.cached, forced.cost) == (24, 24, 0.0)
    stored = storage.judge_scores(db, rubric_id=first.rubric_id)
    assert all(s.cached for s in stored) and all(s.run_id == forced.run_id for s in stored)


def test_a_rubric_edit_re_asks_only_the_dimensions_whose_version_changed(db, rooms) -> None:
    before = judges.run_judges(db, rubric(), panel(), rooms)
    model = OfflineModel(func=reply)
    after = judges.run_judges(db, rubric(warmth_points=7), panel(model), rooms)
    assert after.rubric_id != before.rubric_id
    assert (after.asked, after.reused) == (12, 12)  # warmth re-asked, code carried over
    asked = {judged_message(p) for _, p in model.prompts}
    assert all("(highest)" in p for _, p in model.prompts) and len(asked) == 3
    new = storage.judge_scores(db, rubric_id=after.rubric_id)
    carried = [s for s in new if s.dimension == "code"]
    assert all(s.reused_from is not None and s.rubric_version == rubric(7).version for s in carried)
    old = storage.judge_scores(db, rubric_id=before.rubric_id)
    assert {s.rubric_version for s in old} == {rubric().version}  # old scores keep theirs
    assert len(judges.stored_rubrics(db)) == 2


def test_a_failed_score_is_kept_per_unit_and_retried_alone(db, rooms) -> None:
    tries: list[str] = []

    def flaky(prompt: str, system: str) -> str:
        if judged_message(prompt).endswith("Pay or else"):
            tries.append(prompt)
            if len(tries) <= 4 and "Which move" in prompt:  # both rooms' "Pay or else", once
                return "maybe"
        return reply(prompt, system)

    run = judges.run_judges(db, rubric(), [judges.Judge("flaky", OfflineModel(func=flaky))], rooms)
    assert (run.failed, run.status) == (2, "failed")
    failed = storage.judge_scores(db, rubric_id=run.rubric_id, failed=True)
    assert {s.unit for s in failed} == {f"{r}:2" for r in rooms}
    assert failed[0].value is None and failed[0].error["raw"]
    retry_model = OfflineModel(func=flaky)
    done = judges.retry_failed_scores(db, run.run_id, judges=[judges.Judge("flaky", retry_model)])
    assert (done.failed, done.status) == (0, "done")
    assert all(judged_message(p).endswith("Pay or else") for _, p in retry_model.prompts)
    assert len(retry_model.prompts) == 2  # those two alone


@pytest.mark.parametrize(
    ("values", "scale", "how", "expected"),
    [
        (["a", "a", "b"], {"kind": "nominal", "labels": ["a", "b"]}, None, "a"),
        (["a", "b"], {"kind": "nominal", "labels": ["a", "b"]}, None, None),  # a tie
        ([1, 4, 5, 2], {"kind": "ordinal", "points": 5}, None, 2),  # the lower middle
        (["hi", "lo", "hi"], {"kind": "ordinal", "labels": ["lo", "mid", "hi"]}, None, "hi"),
        ([1.0, 2.0, 6.0], {"kind": "interval"}, None, 3.0),
        ([1.0, 2.0, 6.0], {"kind": "interval"}, "median", 2.0),
    ],
)
def test_the_panel_combines_by_level(values, scale, how, expected) -> None:
    dimension = Rubric(
        name="r", dimensions=[{"name": "d", "description": "d", "scale": scale}]
    ).dimension("d")
    assert judges.combined(values, dimension, how=how) == expected


def test_panel_names_are_checked() -> None:
    with pytest.raises(ConversationValueError, match="distinct"):
        judges.panel_of([judges.Judge("a", OfflineModel()), judges.Judge("a", OfflineModel())])
    with pytest.raises(ConversationValueError, match="panel"):
        judges.panel_of([judges.Judge("panel", OfflineModel())])


def _tag(db: Database, rooms: list[int], coder: str, codes: dict[str, str]) -> None:
    for room_id in rooms:
        for event in storage.events(db, room_id, kinds=["human"]):
            code = next((c for word, c in codes.items() if word in event.content), None)
            if code is not None:
                coding.tag_message(db, event.id, code, by=coder, rating=4)


def test_coders_judges_and_the_panel_are_raters_of_the_same_units(db, rooms, experiment) -> None:
    _tag(db, rooms, "ann", CODES)
    _tag(db, rooms, "bob", {"give": "concession", "else": "question"})  # disagrees once
    three = [*panel(), judges.Judge("again", OfflineModel(func=reply))]  # a majority each time
    run = judges.run_judges(db, rubric(), three, rooms, experiment_id=experiment)
    coded = human_ratings(db, rubric(), rooms, "code")
    assert coded.coders == ["human:ann", "human:bob"] and len(coded.ratings) == 12
    warmth = human_ratings(db, rubric(), rooms, "warmth", label="concession")
    assert {s.value for s in warmth.ratings} == {4}
    rows = ratings(db, run.rubric_id, "code")
    assert {s.rater for s in rows} == {"keyword", "own", "again", "panel", "human:ann", "human:bob"}
    table = agreement(db, run.rubric_id, "code", n_boot=50)
    assert table.pair("keyword", "human:ann").estimate == pytest.approx(1.0)
    assert table.pair("keyword", "human:bob").estimate < 1.0
    matrix = confusion(rows, "keyword", ["human:ann", "human:bob"])
    assert matrix.loc["threat", "question"] == 2 and matrix.loc["threat", "threat"] == 2
    differ = disagreements(rows, "keyword", ["human:bob"])
    # bob tagged "Pay or else" a question and left "What is your price?" untagged ("none")
    assert sorted(differ["unit"]) == sorted(f"{r}:{seq}" for r in rooms for seq in (2, 3))
    frame = scores_frame(db, run.rubric_id)
    assert {"human:ann", "panel", "keyword"} <= set(frame["rater"])
    per = by_condition(frame, "warmth", "ordinal", rater="keyword")
    assert list(per["estimate"]) == [4, 4] and list(per["n"]) == [3, 3]  # by condition
    assert math.isnan(per.iloc[0]["low"]) or per.iloc[0]["low"] <= 4


def test_the_scores_and_agreement_exports(db, rooms, experiment) -> None:
    import csv
    import io

    _tag(db, rooms, "ann", CODES)
    run = judges.run_judges(db, rubric(), panel(), rooms, experiment_id=experiment)
    rows = list(csv.DictReader(io.StringIO(export_scores_csv(db, run.rubric_id))))
    assert list(rows[0]) == ["unit", "room_id", "seq", "condition", "rater", "dimension", "value",
                             "rubric_version", "reason", "error"]  # fmt: skip
    keyword = [r for r in rows if r["rater"] == "keyword" and r["dimension"] == "code"]
    assert len(keyword) == 6 and keyword[0]["reason"] == "The message says so."
    assert {r["rubric_version"] for r in rows} == {rubric().version}
    assert {r["rater"] for r in rows} == {"keyword", "own", "panel", "human:ann"}
    table = list(csv.DictReader(io.StringIO(export_agreement_csv(db, run.rubric_id, "code", n_boot=50))))  # fmt: skip
    pairs = {(r["rater_a"], r["rater_b"]) for r in table}
    assert ("keyword", "human:ann") in pairs and table[-1]["rater_a"] == "all"
    assert all(r["n_units"] for r in table)


def test_two_judges_on_one_model_are_two_samples_not_one_cached_answer(db, rooms) -> None:
    """Issue 35: the panel's default (two judges, one model) sent identical prompts, so judge 2's
    scores were judge 1's cached answers and their agreement was alpha 1.00 [1.00, 1.00]."""
    calls: list[str] = []

    def sampled(prompt: str, system: str) -> str:  # a model that samples: each call its own
        calls.append(prompt)
        return f"{1 + len(calls) % 5}\nA reason." if "Rate it" in prompt else reply(prompt, system)

    model = OfflineModel(func=sampled)
    same = [judges.Judge("first", model), judges.Judge("second", model)]
    assert judges.iterations(same) == {"first": 0, "second": 1}
    run = judges.run_judges(db, rubric(), same, rooms)
    stored = storage.judge_scores(db, rubric_id=run.rubric_id)
    assert run.cached == 0 and len(calls) == 24  # every score asked of the model
    keys = {(s.unit, s.dimension): set() for s in stored}
    for s in stored:
        keys[(s.unit, s.dimension)].add(s.cache_key)
    assert all(len(found) == 2 for found in keys.values())  # each judge its own cache entry
    warmth = {(s.unit, s.judge): s.value for s in stored if s.dimension == "warmth"}
    assert any(warmth[(u, "first")] != warmth[(u, "second")] for u, _ in warmth)
    assert judges.copies(stored) == {}
    # a re-run is answered from the cache, each judge from its own entries
    again = judges.run_judges(db, rubric(), same, rooms, rescore=True)
    assert again.cached == 24 and len(calls) == 24
    rescored = storage.judge_scores(db, rubric_id=run.rubric_id)
    assert {(s.unit, s.judge, s.cache_key) for s in rescored} == {
        (s.unit, s.judge, s.cache_key) for s in stored
    }


def test_a_judge_that_copies_anothers_cached_answers_is_no_rater(db, rooms) -> None:
    """Scores stored before each judge had its own iteration: judge 2's are judge 1's cached
    answers. They are marked, left out of the panel, and never enter agreement as a rater."""
    run = judges.run_judges(db, rubric(), panel(), rooms)
    stored = storage.judge_scores(db, rubric_id=run.rubric_id)
    copied = [
        {
            **{name: getattr(s, name) for name in storage.SCORE_FIELDS},
            "judge": "copy",
            "cached": True,
        }
        for s in stored
        if s.judge == "keyword"
    ]
    storage.record_judge_scores(db, run.run_id, run.rubric_id, copied)
    rows = storage.judge_scores(db, rubric_id=run.rubric_id)
    assert judges.copies(rows) == {"copy": "keyword"}
    scored = judges.scores(db, run.rubric_id)
    assert {s.copy_of for s in scored if s.rater == "copy"} == {"keyword"}
    raters = {s.rater for s in ratings(db, run.rubric_id, "code")}
    assert "copy" not in raters and {"keyword", "own"} <= raters
    # the copy makes no majority: where the two independent judges differ, the panel has none
    by = {(s.unit, s.rater): s.value for s in scored if s.dimension == "code"}
    for unit in {u for u, _ in by}:
        if by[(unit, "keyword")] != by[(unit, "own")]:
            assert by[(unit, "panel")] is None
    table = agreement(db, run.rubric_id, "code", n_boot=50)
    assert "copy" not in table.raters


def test_a_run_of_calls_of_unknown_price_never_says_zero_dollars(db, rooms, monkeypatch) -> None:
    """Issue 35: the Judges run line said "$0.0000" for calls of unknown price (a self-hosted
    server): their price is unknown, not zero."""
    from conversation.models import calls

    monkeypatch.setattr(calls, "known_cost", lambda model, cost: None)  # a self-hosted server
    from ui.results.judges import run_line

    run = judges.run_judges(db, rubric(), [judges.Judge("j", OfflineModel(func=reply))], rooms)
    assert run.unpriced == 12 and "$0.0000" not in run_line(run)
    assert run_line(run).endswith("; unknown (12 calls of unknown price)")
    mixed = judges.RunSummary(1, 1, "done", 4, 0, 2, 0, 0.25, unpriced=2)
    assert run_line(mixed).endswith("$0.25 + 2 calls of unknown price")
    assert run_line(judges.RunSummary(1, 1, "done", 2, 0, 2, 0, 0.0)).endswith("; $0.00")
