"""Agent library entries (checked at the storage boundary, whoever calls), analysis question
specs, export file names and conversation-API ``Conversation``: refused typed, named and fast."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from edsl import Agent, AgentList

import storage
from conversation.analysis.questions import question_from_spec
from conversation.dialogue.conversation import Conversation
from conversation.rooms.transfer import safe_export_path
from storage import Database
from tests.boundary.conftest import BIG, nested

SK = "sk-" + "a1B2c3D4" * 4

#: (id, create_agent_profile keyword arguments, words the error must contain)
HOSTILE_PROFILES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("name 50 MB", {"name": BIG}, ("name", "limit is 100")),
    ("name with a newline", {"name": "a\nb"}, ("name",)),
    ("traits 50 MB", {"traits": {"t": BIG}}, ("traits", "20,000")),
    ("traits 10,000 deep", {"traits": nested(10_000)}, ("traits", "nested")),
    ("traits a list", {"traits": [1]}, ("traits", "dict")),
    ("traits NaN", {"traits": {"t": float("nan")}}, ("traits",)),
    ("instruction 50 MB", {"instruction": BIG}, ("instruction", "4,000")),
    ("instruction a number", {"instruction": 5}, ("instruction",)),
    ("model 50 MB", {"model": {"service": "test", "x": BIG}}, ("model", "20,000")),
    ("a secret-named trait", {"traits": {"password": "hunter2"}}, ("traits.password", "secrets")),
    ("an sk- trait", {"traits": {"note": SK}}, ("traits.note", "secrets")),
    (
        "an api_key in the model",
        {"model": {"service": "openai", "api_key": SK}},
        ("model.api_key",),
    ),
]


@pytest.mark.parametrize(
    ("arguments", "words"), [c[1:] for c in HOSTILE_PROFILES], ids=[c[0] for c in HOSTILE_PROFILES]
)
def test_hostile_library_entries_are_refused(
    seeded_db: Database,
    refused: Callable[..., Any],
    arguments: dict[str, Any],
    words: tuple[str, ...],
) -> None:
    call = {"name": "Alice", **arguments}
    rest = {k: v for k, v in call.items() if k != "name"}
    refused(
        lambda: storage.create_agent_profile(seeded_db, call["name"], **rest),
        *words,
        error=storage.StorageValueError,
    )


def test_a_library_update_is_checked_like_a_new_entry(
    seeded_db: Database, refused: Callable[..., Any]
) -> None:
    profile_id = storage.create_agent_profile(seeded_db, "Cara", traits={"age": 3})
    refused(
        lambda: storage.update_agent_profile(seeded_db, profile_id, traits=nested(5000)),
        "traits",
        error=storage.StorageValueError,
    )


#: (id, question spec, words the error must contain)
HOSTILE_QUESTIONS: list[tuple[str, Any, tuple[str, ...]]] = [
    ("a name with a space", {"name": "deal reached"}, ("question name", "lowercase")),
    ("a name starting with _", {"name": "_deal"}, ("question name", "starting with a letter")),
    ("a name with a trailing newline", {"name": "deal\n"}, ("question name",)),
    ("a name of 65", {"name": "a" * 65}, ("question name", "1-64")),
    ("a keyword", {"name": "class"}, ("question name", "keyword")),
    ("a row column", {"name": "scenario_index"}, ("question name", "scenario_index")),
    ("a name 50 MB", {"name": BIG}, ("question name",)),
    ("text 50 MB", {"text": BIG}, ("question text", "4000")),
    ("text with __class__", {"text": "{{ transcript.__class__ }}"}, ("question text",)),
    ("text with a loop", {"text": "{% for i in range(9) %}x{% endfor %}"}, ("question text",)),
    ("an unknown field", {"zzz": 1}, ("unknown field", "zzz")),
    ("an unknown type", {"type": "essay"}, ("question type",)),
    (
        "options nested",
        {"type": "multiple_choice", "options": [nested(1000), "b"]},
        ("options[0]",),
    ),
    ("options 50 MB", {"type": "multiple_choice", "options": [BIG, "b"]}, ("options[0]", "200")),
    ("a NaN bound", {"type": "numerical", "min_value": float("nan")}, ("min_value",)),
    ("not a dict", [1], ("question spec",)),
]


@pytest.mark.parametrize(
    ("spec", "words"), [c[1:] for c in HOSTILE_QUESTIONS], ids=[c[0] for c in HOSTILE_QUESTIONS]
)
def test_hostile_question_specs_are_refused(
    refused: Callable[..., Any], spec: Any, words: tuple[str, ...]
) -> None:
    full = (
        {"type": "yes_no", "name": "deal", "text": "Was a deal reached?", **spec}
        if isinstance(spec, dict)
        else spec
    )
    refused(lambda: question_from_spec(full), *words)


def test_question_names_follow_the_rule_the_message_states() -> None:
    for name in ("deal", "deal_reached_2", "a" * 64, "answer"):
        assert (
            question_from_spec({"type": "yes_no", "name": name, "text": "Ok?"}).question_name
            == name
        )


@pytest.mark.parametrize(
    "filename",
    [
        "../escape.json",
        "/etc/passwd",
        ".hidden",
        "a/b.json",
        "a\\b.json",
        "x" * 101,
        BIG,
        "",
        5,
        "a\nb",
    ],
    ids=[
        "dotdot",
        "absolute",
        "hidden",
        "folder",
        "backslash",
        "101 chars",
        "50 MB",
        "empty",
        "number",
        "newline",
    ],
)
def test_hostile_export_file_names_are_refused(
    tmp_path: Path, refused: Callable[..., Any], filename: Any
) -> None:
    refused(lambda: safe_export_path(tmp_path, filename), "export file name")


#: (id, Conversation keyword arguments, words the error must contain)
HOSTILE_CONVERSATIONS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    (
        "traits 50 MB",
        {"agent_list": AgentList([Agent(name="A", traits={"t": BIG})])},
        ("traits of 'A'", "20,000"),
    ),
    (
        "traits 300 deep",
        {"agent_list": AgentList([Agent(name="A", traits={"t": nested(300)})])},
        ("traits of 'A'", "nested"),
    ),
    (
        "template __mro__",
        {"per_round_message_template": "{{ speaker_name.__class__.__mro__ }}"},
        ("per_round_message_template",),
    ),
    (
        "template self",
        {"per_round_message_template": "{{ self }}"},
        ("per_round_message_template", "'self'"),
    ),
    (
        "template huge power",
        {"per_round_message_template": "{{ 9 ** 9 ** 9 }}"},
        ("per_round_message_template",),
    ),
    (
        "template 50 MB",
        {"per_round_message_template": BIG},
        ("per_round_message_template", "limit"),
    ),
    (
        "template fails on the last turn",
        {"max_turns": 3, "per_round_message_template": "{{ 1 // (turns_left - 1) }}"},
        ("per_round_message_template", "division"),
    ),
    ("max_turns text", {"max_turns": "x"}, ("max_turns",)),
]


@pytest.mark.parametrize(
    ("arguments", "words"),
    [c[1:] for c in HOSTILE_CONVERSATIONS],
    ids=[c[0] for c in HOSTILE_CONVERSATIONS],
)
def test_hostile_conversations_are_refused_when_made(
    refused: Callable[..., Any], arguments: dict[str, Any], words: tuple[str, ...]
) -> None:
    call = {"agent_list": AgentList([Agent(name="A")]), **arguments}
    refused(lambda: Conversation(**call), *words)
