"""RoomLog's incremental view equals a view built from scratch, and the facts it keeps for the
planners (EventLog) equal a scan: a long room's turn is cheap and still plans the same turn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conversation.context.window import ContextPolicy, build_context, event_tokens
from conversation.planning.events import (
    EventLog,
    agent_turns,
    agent_turns_since,
    opener_index,
)
from conversation.planning.planner import cycle_round
from conversation.rooms.log import LogView, RoomLog, log_view
from conversation.termination.conditions import MaxTurns
from conversation.termination.state import RoomState, TokenUsage

ROSTER = ("Ana", "Bo")


@dataclass
class Row:
    seq: int
    kind: str
    speaker: str
    content: str = ""
    round: int = 0
    state: str = "done"
    visible_to: list[str] | None = None
    data: dict[str, Any] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None


ROW_SHAPES = st.sampled_from(
    [
        ("human", "user", "done", None),
        ("human", "Cy", "done", ["Ana"]),
        ("agent", "Ana", "done", None),
        ("agent", "Bo", "done", None),
        ("agent", "Bo", "failed", None),
        ("pass", "Ana", "done", None),
        ("system", "system", "done", None),
        ("agent", "Ana", "done", ["Bo"]),
    ]
)


@st.composite
def rows_and_chunks(draw: Any) -> tuple[list[Row], list[int]]:
    shapes = draw(st.lists(ROW_SHAPES, max_size=40))
    texts = draw(st.lists(st.text(max_size=30), min_size=len(shapes), max_size=len(shapes)))
    rows = [
        Row(i + 1, kind, speaker, text, state=state, visible_to=private, input_tokens=i % 3)
        for i, ((kind, speaker, state, private), text) in enumerate(zip(shapes, texts, strict=True))
    ]
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=5)))
    return rows, cuts


@settings(max_examples=150, deadline=None)
@given(rows_and_chunks())
def test_an_incremental_view_equals_a_view_from_scratch(case: tuple[list[Row], list[int]]) -> None:
    rows, cuts = case
    log = RoomLog(ROSTER)
    start = 0
    for cut in [*cuts, len(rows)]:
        log.extend(rows[start:cut])
        start = cut
    view, scratch = log.view(), log_view(ROSTER, rows)
    assert view.events == scratch.events
    assert view.seqs == scratch.seqs
    assert view.costs == tuple(event_tokens(e) for e in scratch.events)
    events = view.events
    assert type(events) is EventLog
    plain = tuple(events)
    assert opener_index(ROSTER, events) == opener_index(ROSTER, plain)
    assert agent_turns(ROSTER, events) == agent_turns(ROSTER, plain)
    assert cycle_round(ROSTER, events) == cycle_round(ROSTER, plain)
    for start_at in range(len(plain) + 1):
        assert agent_turns_since(ROSTER, events, start_at) == agent_turns_since(
            ROSTER, plain, start_at
        )
    # Another roster: the kept facts do not apply, the helpers scan.
    assert opener_index(("Ana",), events) == opener_index(("Ana",), plain)
    assert EventLog.of(ROSTER, plain).last_human == opener_index(ROSTER, plain)
    for policy in (ContextPolicy(), ContextPolicy(max_tokens=60), ContextPolicy(max_messages=3)):
        for agent in ROSTER:
            with_costs = build_context(agent, ROSTER, events, policy=policy, costs=view.costs)
            assert with_costs == build_context(agent, ROSTER, plain, policy=policy)


def test_the_log_view_is_the_state_conditions_evaluate() -> None:
    """One view of a log: what planners and prompts read is what a stop condition evaluates."""
    rows = [
        Row(1, "human", "user", "hello"),
        Row(2, "agent", "Ana", "hi", input_tokens=5, output_tokens=2),
        Row(3, "system", "room", "Paused by Ed", data={"event": "paused", "by": "Ed"}),
        Row(4, "agent", "Bo", "yo", input_tokens=7, output_tokens=1),
    ]
    kept, scratch = RoomLog(ROSTER, rows).view(), log_view(ROSTER, rows)
    assert LogView is RoomState
    for view in (kept, scratch):
        assert isinstance(view, RoomState)
        assert view.state() is view
        assert view.seqs == (1, 2, 4) and view.last_seq == 4
        assert view.usage == TokenUsage(12, 3)
        assert view.agent_turns() == 2
        assert MaxTurns(2).check(view) is not None and MaxTurns(3).check(view) is None
    assert kept == scratch
    assert kept.lines == ("1. user: hello", "2. Ana: hi", "4. Bo: yo")
    assert kept.prefix(2).seqs == (1, 2) and kept.prefix(2).lines == kept.lines[:2]
    assert kept.state("stop pressed").stop_requested == "stop pressed"
