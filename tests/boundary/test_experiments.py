"""Experiment designs: validated whole before anything is written; a refused design leaves no
experiment row and no room behind."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from conversation.experiments import runs
from storage import Database
from tests.boundary.conftest import AGENTS, BIG

DESIGN: dict[str, Any] = {
    "template": {
        "agents": AGENTS,
        "planner": {"kind": "round_robin_room", "max_rounds": 1},
        "model": {"service": "offline", "model": "offline"},
        "opening": "Shall we start?",
    },
    "conditions": [{"label": "calm", "traits": {"Alice": {"mood": "calm"}}}],
    "replicates": 2,
}


def design(**changes: Any) -> dict[str, Any]:
    changed = copy.deepcopy(DESIGN)
    for dotted, value in changes.items():
        target = changed
        *parents, last = dotted.split("__")
        for key in parents:
            target = target[key] if not key.isdigit() else target[int(key)]
        target[int(last) if last.isdigit() else last] = value
    return changed


def with_conditions(*extra: Any) -> dict[str, Any]:
    changed = copy.deepcopy(DESIGN)
    changed["conditions"] = [*changed["conditions"], *extra]
    return changed


#: (id, design, words the error must contain)
HOSTILE: list[tuple[str, Any, tuple[str, ...]]] = [
    ("not an object", [1, 2], ("experiment design", "list")),
    ("no template", {"conditions": [{"label": "a"}], "replicates": 1}, ("template",)),
    ("unknown field", design(extra=1), ("unknown field", "'extra'")),
    ("no agents", design(template__agents=[]), ("template.agents",)),
    ("an agent without a name", design(template__agents=[{"traits": {}}]), ("template.agents",)),
    ("no opening", design(template__opening=""), ("template.opening",)),
    ("opening 50 MB", design(template__opening=BIG), ("experiment design", "limit")),
    ("opening a number", design(template__opening=5), ("template.opening",)),
    ("conditions empty", design(conditions=[]), ("conditions",)),
    ("a condition without a label", with_conditions({}), ("conditions[1] label",)),
    ("a label of 1,000", with_conditions({"label": "x" * 1000}), ("conditions[1] label", "200")),
    ("a label with a newline", with_conditions({"label": "a\nb"}), ("conditions[1] label",)),
    ("traits a list", with_conditions({"label": "b", "traits": [1]}), ("conditions[1] traits",)),
    (
        "unknown condition field",
        with_conditions({"label": "b", "zzz": 1}),
        ("conditions[1]", "'zzz'"),
    ),
    (
        "a bad planner in one condition",
        with_conditions({"label": "b", "planner": {"kind": "nope"}}),
        ("condition 'b'", "planner kind"),
    ),
    (
        "a bad termination in one condition",
        with_conditions({"label": "b", "termination": {"kind": "max_turns", "max_turns": -1}}),
        ("condition 'b'",),
    ),
    (
        "a hostile template in one condition",
        with_conditions({"label": "b", "prompt_template": "{{ speaker_name.__class__ }}"}),
        ("condition 'b'", "prompt_template"),
    ),
    (
        "a 50 MB opening in one condition",
        with_conditions({"label": "b", "opening": BIG}),
        ("experiment design", "limit"),
    ),
    ("repeated labels", with_conditions({"label": "calm"}), ("unique", "calm")),
    ("replicates text", design(replicates="x"), ("replicates",)),
    ("replicates 0", design(replicates=0), ("Replicates",)),
    ("replicates 10,000", design(replicates=10_000), ("Replicates",)),
    ("deep nesting", design(template__context={"a": [[[[[[[[[[[[1]]]]]]]]]]]]}), ("nested",)),
    ("a secret in the template", design(template__api_key="abc"), ("api_key", "secrets")),
    (
        "an sk- trait in one condition",
        with_conditions({"label": "b", "traits": {"Bob": {"note": "sk-" + "a1B2c3D4" * 4}}}),
        ("secrets",),
    ),
]


@pytest.mark.parametrize(("config", "words"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_hostile_designs_leave_no_experiment_and_no_room(
    seeded_db: Database, refused: Callable[..., Any], config: Any, words: tuple[str, ...]
) -> None:
    refused(lambda: runs.create(seeded_db, "study", config), *words)


@pytest.mark.parametrize(
    ("name", "words"),
    [(BIG, ("name", "limit is 200")), ("", ("name",)), ("a\nb", ("name", "one line"))],
    ids=["50 MB", "empty", "newline"],
)
def test_hostile_experiment_names_are_refused(
    seeded_db: Database, refused: Callable[..., Any], name: Any, words: tuple[str, ...]
) -> None:
    refused(lambda: runs.create(seeded_db, name, DESIGN), *words)


def test_materialize_refuses_an_unknown_or_malformed_id(
    seeded_db: Database, refused: Callable[..., Any]
) -> None:
    refused(lambda: runs.materialize(seeded_db, "x"), "experiment")
    refused(lambda: runs.materialize(seeded_db, 99_999), "experiment")


def test_a_sound_design_still_creates_every_room(seeded_db: Database) -> None:
    import storage

    experiment_id = runs.create(seeded_db, "study", with_conditions({"label": "angry"}))
    assert len(storage.list_rooms(seeded_db, experiment_id=experiment_id, limit=None)) == 4
