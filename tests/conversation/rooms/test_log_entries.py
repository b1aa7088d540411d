"""The log's readers ask its typed entries (``vocabulary.log``) what a row means, and never decide
it for themselves: who may see a row is one rule (``may_see``), and what a row is to the agents
is its entry's ``reading``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vocabulary.log
from conversation.context.window import ContextPolicy, build_context, visible_positions
from conversation.rooms.log import log_view
from vocabulary import Reading, entries_of

ROSTER = ("Ana", "Bo", "Cy")
PEOPLE = ("sam", "lee")


@dataclass
class Row:
    seq: int
    kind: str
    speaker: str
    content: str = ""
    round: int = 0
    state: str | None = None
    visible_to: list[str] | None = None
    data: dict[str, Any] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None


def private_log() -> list[Row]:
    """sam says something to Ana alone, then Ana answers Bo alone."""
    return [
        Row(1, "human", "sam", "Hello all."),
        Row(2, "human", "sam", "A secret for Ana.", visible_to=["Ana"]),
        Row(3, "agent", "Ana", "A word for Bo.", state="done", visible_to=["Bo"]),
        Row(4, "agent", "Cy", "Public again.", state="done"),
    ]


def prompt_lines(viewer: str, rows: list[Row]) -> str:
    """What the agents' prompt builder shows ``viewer`` of ``rows`` (the core's window)."""
    view = log_view(ROSTER, rows)
    context = build_context(viewer, ROSTER, view.events, policy=ContextPolicy(), seqs=view.seqs)
    return " | ".join(view.events[i].content for i in context.positions)


#: Readers that filter a room's log for one viewer: each returns the texts ``viewer`` is shown.
#: A reader added here must answer with ``vocabulary.log.may_see``, not a rule of its own.
READERS = {"an agent's prompt": prompt_lines}


@pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))
def test_a_private_message_is_seen_by_its_audience_and_its_author_only(reader: Any) -> None:
    rows = private_log()
    assert "A secret for Ana." in reader("Ana", rows)
    assert "A secret for Ana." not in reader("Bo", rows)  # another seat
    assert "A word for Bo." in reader("Ana", rows)  # its author
    assert "A word for Bo." in reader("Bo", rows)
    assert "A word for Bo." not in reader("Cy", rows)


@pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))
def test_readers_ask_the_one_visibility_rule(reader: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that re-implemented visibility would still hide the secret here."""
    monkeypatch.setattr(vocabulary.log, "may_see", lambda name, speaker, private_to: True)
    assert "A secret for Ana." in reader("Bo", private_log())
    monkeypatch.setattr(vocabulary.log, "may_see", lambda name, speaker, private_to: False)
    assert "A secret for Ana." not in reader("Ana", private_log())


ROW_SHAPES = st.sampled_from(
    [
        ("human", "sam", None),
        ("agent", "Ana", "done"),
        ("agent", "Bo", "done"),
        ("agent", "Cy", "stopped"),
        ("pass", "Bo", "done"),
        ("system", "room", None),
    ]
)
AUDIENCES = st.none() | st.lists(st.sampled_from([*ROSTER, *PEOPLE]), min_size=1, max_size=2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(ROW_SHAPES, AUDIENCES), max_size=12), st.sampled_from(ROSTER))
def test_what_the_core_shows_an_agent_is_what_each_entry_says_it_may_see(
    shapes: list[Any], viewer: str
) -> None:
    rows = [
        Row(seq, kind, speaker, f"m{seq}", state=state, visible_to=audience)
        for seq, ((kind, speaker, state), audience) in enumerate(shapes, 1)
    ]
    view = log_view(ROSTER, rows)
    by_seq = {entry.seq: entry for entry in entries_of(rows)}
    shown = {view.seqs[i] for i in visible_positions(viewer, view.events)}
    assert shown == {seq for seq in view.seqs if by_seq[seq].visible_to(viewer)}
    # and the view holds exactly the entries agents read, nothing a reader decided on its own
    assert set(view.seqs) == {s for s, e in by_seq.items() if e.reading is not Reading.UNSEEN}
