"""A price that is unknown (a self-hosted server: ``cost`` None) is shown as unknown on every page,
never as $0.0000, and totals say how many calls they leave out (issue 24)."""

from __future__ import annotations

import pytest

import storage
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.room import Room
from conversation.termination.budget import Spend, format_cost
from conversation.termination.conditions import MaxTurns
from storage import Database
from tests.app.page_support import app, captions, shown
from tests.support.openai_server import OpenAICompatibleServer


@pytest.mark.parametrize(
    ("dollars", "unpriced", "text"),
    [
        (0.42, 0, "$0.42"),
        (0.0, 0, "$0.00"),
        (0.42, 3, "$0.42 + 3 calls of unknown price"),
        (0.0, 1, "unknown (1 call of unknown price)"),
        (None, 2, "unknown (2 calls of unknown price)"),
    ],
)
def test_format_cost(dollars, unpriced, text) -> None:
    assert format_cost(dollars, unpriced) == text


def test_a_budget_counts_the_calls_of_unknown_price() -> None:
    from conversation.termination.budget import Budget

    spent = Spend(100, 0.0, 2) + Spend(50, 0.5, 1)
    assert spent == Spend(150, 0.5, 3)
    assert Budget(max_dollars=1.0).describe(spent) == "$0.50 + 3 calls of unknown price of $1.00"


@pytest.fixture
def self_hosted_room(db: Database):
    with OpenAICompatibleServer(default_text="Fine.") as server:
        room = Room.create(
            db,
            name="self-hosted",
            agents=[{"name": "Ann"}, {"name": "Ben"}],
            planner=RoundRobinPolicy(),
            termination=MaxTurns(2),
            model={"service": "openai_compatible", "model": "tiny", "base_url": server.base_url},
        )
        room.post("Hello.")
        room.run()
        yield room


def test_self_hosted_spend_is_unknown_not_zero(db: Database, self_hosted_room: Room) -> None:
    tokens, dollars, unpriced = storage.room_spend(db, self_hosted_room.id)
    assert tokens > 0 and dollars == 0 and unpriced == 2
    from storage.research import frames

    (row,) = frames.rooms_summary(db).itertuples()
    assert row.unpriced_calls == 2

    room_page = app("pages/room.py", room=str(self_hosted_room.id))
    line = next(c for c in captions(room_page) if c.startswith("Spent:"))
    assert "unknown (2 calls of unknown price)" in line
    assert "some calls have no known price" not in line and "$0.00" not in line

    home = app("pages/home.py")
    (table,) = [d.value for d in home.dataframe if "cost" in d.value.columns]
    assert list(table["cost"]) == ["unknown (2 calls of unknown price)"]
    assert "unpriced_calls" not in table.columns


def test_the_experiment_spend_counts_unknown_prices(db: Database) -> None:
    progress_spend = Spend(*storage.experiment_spend(db, 999))
    assert progress_spend == Spend(0, 0.0, 0)
    assert shown(progress_spend.cost_text) == "$0.00"
