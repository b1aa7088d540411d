"""An agents file at the door (``library.read_agents_file``): refused as a whole with a typed
error (``AgentsFileRejected``, a ``ConversationValueError``) whose message names the agent and
the field in a person's words: never a decoder's or the interpreter's message."""

from __future__ import annotations

import json

import pytest

from conversation.exceptions import ConversationValueError
from conversation.library import (
    AgentDraft,
    AgentsFileRejected,
    export_json,
    read_agents_file,
)

#: What a person must never be shown.
MACHINE_WORDS = (
    "codec", "decode byte", "recursion", "Traceback", "pydantic", "errors.pydantic",
    "set_int_max_str_digits", "integer string conversion", "BOM", "utf-8-sig", "Expecting value",
)  # fmt: skip


def refused(data: bytes | str) -> str:
    with pytest.raises(AgentsFileRejected) as caught:
        read_agents_file(data)
    assert isinstance(caught.value, ConversationValueError)
    message = str(caught.value)
    assert not any(word in message for word in MACHINE_WORDS), message
    return message


def test_a_file_that_is_not_utf8_says_so_in_a_persons_words() -> None:
    """Latin-1 bytes (0xfa is 'ú'): no "'utf-8' codec can't decode byte 0xfa"."""
    data = '[{"name": "Ra\u00fal"}]'.encode("latin-1")
    message = refused(data)
    assert "not UTF-8 text" in message and "save the file as UTF-8" in message


def test_a_file_nested_past_the_parser_says_so_in_a_persons_words() -> None:
    """Deep enough that Python's JSON parser gives up: no "maximum recursion depth exceeded"."""
    message = refused("[" * 100_000 + "]" * 100_000)
    assert "nested more than" in message and "flatten" in message


def test_a_file_saved_with_a_byte_order_mark_is_read() -> None:
    """Notepad's "UTF-8 with BOM": json said "Unexpected UTF-8 BOM (decode using utf-8-sig)"."""
    agents = [{"name": "Raul", "traits": {"city": "Bogot\u00e1", "age": 30}}]
    text = "\ufeff" + json.dumps(agents, ensure_ascii=False)
    expected = [AgentDraft("Raul", {"city": "Bogot\u00e1", "age": "30"})]
    assert read_agents_file(text.encode("utf-8")) == expected
    assert read_agents_file(text) == expected  # pasted, or decoded by the caller


def test_a_number_too_long_to_read_says_so_in_a_persons_words() -> None:
    """Python refuses a whole number past 4,300 digits with a ValueError that is not a
    ConversationValueError (the page showed a traceback) and names sys.set_int_max_str_digits."""
    message = refused('[{"name": "A", "traits": {"age": ' + "9" * 5000 + "}}]")
    assert "5,000 digits" in message and "write it as text" in message
    assert read_agents_file('[{"name": "A", "traits": {"id": -' + "9" * 40 + "}}]")  # an id


def test_an_empty_file_says_it_is_empty() -> None:
    assert "the file is empty" in refused(b"")
    assert "the file is empty" in refused(" \n")


def test_a_file_nested_deeper_than_an_agent_is_refused() -> None:
    deep: object = "x"
    for _ in range(30):
        deep = {"a": deep}
    message = refused(json.dumps([{"name": "A", "model": deep}]))
    assert "nested more than" in message


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ([{"name": "A", "traits": {"budget": {"max": 1}}}], "Agent 1: trait 'budget' must be text"),
        ([{"name": "A"}, {"name": "B", "instruction": 5}], "Agent 2: instruction must be text"),
        ([{"name": "A", "model": "gpt"}], "Agent 1: model must be an object"),
        ([{"name": "A", "api_key": "sk-1"}], "Agent 1 has unknown field(s) ['api_key']"),
        (["Alice"], "Agent 1 must be an object"),
        ([{"name": "A"}, {"name": "a"}], "Agent 2 ('a'), name: An agent named 'a' already exists"),
        ([{"name": 5}], "Agent 1: name must be text, not int"),  # was "Give the agent a name."
        ([{"traits": {}}], "Agent 1, name: Give the agent a name."),  # was "Agent 1 (''), ..."
        ({"edsl_class_name": "AgentList", "agent_list": [{"name": None}]}, "Agent 1, name: Give the agent a name."),
        ({"format": "conversation-rooms/agents", "version": 1, "agents": [], "x": 1}, "the file has unknown field(s) ['x']"),
        ({"format": "conversation-rooms/agents", "version": 1, "agents": {}}, "the file agents must be a list"),
        ({"edsl_class_name": "AgentList", "agent_list": [{"name": "A", "model": {}}]}, "Agent 1 has unknown field(s) ['model']"),
    ],
)  # fmt: skip
def test_a_bad_agent_is_named_with_its_field(document: object, words: str) -> None:
    assert words in refused(json.dumps(document))


def test_a_good_file_reads_back_as_the_library_wrote_it() -> None:
    drafts = [
        AgentDraft("Buyer", {"role": "buyer", "budget": "20"}, "Be terse."),
        AgentDraft("Seller", {}, "", {"service": "test", "model": "test"}),
    ]
    assert read_agents_file(export_json(drafts)) == drafts
    assert read_agents_file(json.dumps([{"name": "C", "traits": {"age": 30}}])) == [
        AgentDraft("C", {"age": "30"})
    ]
