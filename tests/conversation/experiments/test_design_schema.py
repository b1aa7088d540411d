"""An experiment design at the door: one declarative schema (``DesignIn``), each refusal naming
the field as the Experiments page shows it (``template.agents``, ``conditions[1] label``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conversation.exceptions import ConversationValueError
from conversation.experiments.design import check_condition, check_design

DESIGN: dict[str, Any] = {
    "template": {"agents": [{"name": "Alice"}, {"name": "Bob", "traits": {}}], "opening": "Hi"},
    "conditions": [{"label": "calm", "traits": {"Alice": {"mood": "calm"}}}],
    "replicates": 2,
}


def changed(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    design = copy.deepcopy(DESIGN)
    target = design
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return design


def test_a_good_design_passes_with_template_options_left_to_the_room() -> None:
    check_design(changed(("template", "planner"), {"kind": "round_robin_room"}))
    check_design(changed(("seeds",), {"c1-r1": 7}))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("template", "agents"), [], "template.agents must be a list of 1 to"),
        (("template", "agents"), [{"traits": {}}], "template.agents is required"),
        (("template", "opening"), 5, "template.opening must be text, got int"),
        (("conditions",), [], "conditions must be a non-empty list"),
        (("conditions", 0, "label"), "a\nb", "conditions[0] label must be one line"),
        (("conditions", 0, "traits"), [1], "conditions[0] traits must map agent names"),
        (("conditions", 0, "model"), "gpt-4o", "conditions[0] model must be an object"),
        (("conditions", 0, "zzz"), 1, "conditions[0] has unknown field(s) ['zzz']"),
        (("replicates",), "2", "replicates must be a whole number from 1 to 50, got str"),
        (("seeds",), {"c1-r1": -1}, "seeds must map room request ids"),
        (("rerun_of",), "3", "rerun_of must be a whole number"),
        (("extra",), 1, "experiment design has unknown field(s) ['extra']"),
    ],
)
def test_a_bad_design_names_the_field(path: tuple[Any, ...], value: Any, message: str) -> None:
    with pytest.raises(ConversationValueError) as caught:
        check_design(changed(path, value))
    assert str(caught.value).startswith(message)


def test_a_stored_condition_is_checked_under_its_own_name() -> None:
    with pytest.raises(ConversationValueError, match="^condition label must not be empty"):
        check_condition({"label": " "}, "condition")
