"""The examples run offline end to end, and importing one starts no inference."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import conversation.models as models_module

EXAMPLES = ["examples.car_buying", "examples.mug_negotiation", "examples.chips"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_importing_an_example_starts_no_inference(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def forbidden(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a model was called at import time")

    monkeypatch.setattr(models_module, "ask", forbidden)
    sys.modules.pop(name, None)
    module = importlib.import_module(name)
    assert callable(module.main)


def test_car_buying_runs_three_conversations_offline(capsys: pytest.CaptureFixture[str]) -> None:
    importlib.import_module("examples.car_buying").main()
    out = capsys.readouterr().out
    assert "Offline model" in out
    assert out.count("=== budget") == 3
    assert "Brother_in_law:" in out


def test_mug_negotiation_reaches_deals_only_when_value_exceeds_cost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    importlib.import_module("examples.mug_negotiation").main()
    out = capsys.readouterr().out
    verdicts = [line for line in out.splitlines() if line.startswith("-> deal reached")]
    assert len(verdicts) == 3
    # (10, 4) and (8, 7) leave room for a deal; (6, 9) does not.
    assert [v.split(";")[0] for v in verdicts] == [
        "-> deal reached: Yes",
        "-> deal reached: Yes",
        "-> deal reached: No",
    ]


def test_chips_trades_change_the_agents_state(capsys: pytest.CaptureFixture[str]) -> None:
    importlib.import_module("examples.chips").main()
    out = capsys.readouterr().out
    assert "Trades: none" not in out
    start = out.split("Start: ")[1].splitlines()[0]
    end = out.split("End:   ")[1].splitlines()[0]
    assert start != end


STUDY_EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))


@pytest.mark.parametrize("path", STUDY_EXAMPLES, ids=lambda p: p.name)
def test_every_study_example_validates(path: Path) -> None:
    """Each study definition shipped in examples/ (the study rules' one among them,
    docs/study-rules.md) passes the door with no problem."""
    from conversation.study import definition_problems, read_definition

    assert definition_problems(path.read_text(encoding="utf-8")) == []
    assert read_definition(path).conditions


def test_the_study_rules_example_uses_every_rule() -> None:
    """examples/study_rules.toml shows each family of issue 33's rules."""
    from conversation.study import read_definition
    from conversation.study.definition.rules import TurnDeal
    from conversation.study.definition.schema import TurnOrder

    definition = read_definition(
        Path(__file__).resolve().parents[1] / "examples" / "study_rules.toml"
    )
    model = definition.model
    room = model.room
    assert room.min_seconds and room.min_messages and room.max_messages
    assert room.turns == TurnOrder.ORDERED and room.turn_order == TurnDeal.DRAWN
    assert room.idle is not None and room.agents.hand_raising and room.agents.max_replies
    assert room.attention_checks
    assert all(c.composition is not None for c in model.experiment.conditions)
    assert any(q.correct is not None for q in model.pre_survey)
    assert any(q.show_if is not None for q in model.post_survey)
    assert model.payouts is not None and model.payouts.bonuses and model.payouts.waiting_per_minute
