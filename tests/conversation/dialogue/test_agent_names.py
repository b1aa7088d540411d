"""Names for conversation-API agent lists: strings, named agents, positional keys, history matching."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conversation.dialogue.agent_names import agent_names, history_names, speaker_name
from conversation.exceptions import ConversationValueError

ALICE, BOB = SimpleNamespace(name="Alice"), SimpleNamespace(name="Bob")


@pytest.mark.parametrize(
    ("agent", "expected"),
    [("Bob", "Bob"), (ALICE, "Alice"), (SimpleNamespace(name=None), None), (object(), None)],
)
def test_speaker_name(agent: object, expected: str | None) -> None:
    assert speaker_name(agent) == expected


def test_agent_names() -> None:
    assert agent_names([ALICE, "Carol", SimpleNamespace(name=None)]) == ("Alice", "Carol", "#2")
    with pytest.raises(ConversationValueError, match="at least one agent"):
        agent_names([])
    with pytest.raises(ConversationValueError, match="'Alice' appears twice"):
        agent_names([ALICE, SimpleNamespace(name="Alice")])


def test_history_names_match_identity_then_name() -> None:
    agents = [ALICE, BOB]
    twin = SimpleNamespace(name="Bob")  # another object with a roster name
    history = [ALICE, "Bob", twin, "Zed", SimpleNamespace(name="Zed")]
    assert history_names(agents, ("Alice", "Bob"), history) == ["Alice", "Bob", "Bob"]
    unnamed = [SimpleNamespace(name=None), SimpleNamespace(name=None)]
    assert history_names(unnamed, ("#0", "#1"), [unnamed[1]]) == ["#1"]
