"""``Room.create``: every part of a room's configuration is refused at the door, typed, named,
fast, and with nothing stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conversation.models import OfflineModel
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from storage import Database
from tests.boundary.conftest import AGENTS, BIG, nested


def deep_termination(depth: int) -> dict[str, Any]:
    condition: dict[str, Any] = {"kind": "max_turns", "max_turns": 3}
    for _ in range(depth):
        condition = {"kind": "any", "parts": [condition]}
    return condition


SK = "sk-" + "a1B2c3D4" * 4
MANY_AGENTS = [{"name": f"a{i}"} for i in range(100_000)]

#: (id, Room.create keyword arguments, words the error must contain)
HOSTILE: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    # names
    ("name 50 MB", {"name": BIG}, ("name", "limit is 200")),
    ("name empty", {"name": "  "}, ("name", "empty")),
    ("name newline", {"name": "a\nb"}, ("name", "one line")),
    ("name not text", {"name": 7}, ("name", "text")),
    # roster
    ("agents not a list", {"agents": "Alice"}, ("agents",)),
    ("agents empty", {"agents": []}, ("at least one agent",)),
    ("100k agents", {"agents": MANY_AGENTS}, ("agents", "at most 100")),
    ("duplicate agent", {"agents": [{"name": "A"}, {"name": "A"}]}, ("unique", "'A'")),
    ("agent name space", {"agents": [{"name": "Al ice"}]}, ("agent name", "valid name")),
    ("agent named room", {"agents": [{"name": "room"}]}, ("agent name", "reserved")),
    ("agent named System", {"agents": [{"name": "System"}]}, ("agent name", "reserved")),
    ("agent unknown field", {"agents": [{"name": "A", "x": 1}]}, ("unknown field", "'x'")),
    (
        "traits 50 MB",
        {"agents": [{"name": "A", "traits": {"t": BIG}}]},
        ("traits of 'A'", "20,000"),
    ),
    (
        "traits deep",
        {"agents": [{"name": "A", "traits": nested(10_000)}]},
        ("traits of 'A'", "nested"),
    ),
    (
        "traits a set",
        {"agents": [{"name": "A", "traits": {"t": {1, 2}}}]},
        ("traits of 'A'", "set"),
    ),
    ("traits NaN", {"agents": [{"name": "A", "traits": {"t": float("nan")}}]}, ("finite",)),
    ("traits not a dict", {"agents": [{"name": "A", "traits": [1]}]}, ("traits of 'A'", "dict")),
    ("instruction 50 MB", {"agents": [{"name": "A", "instruction": BIG}]}, ("instruction of 'A'",)),
    ("agent model deep", {"agents": [{"name": "A", "model": nested(1000)}]}, ("model of 'A'",)),
    # model
    (
        "model unknown key",
        {"model": {"service": "test", "model": "test", "x": 1}},
        ("model spec", "'x'"),
    ),
    (
        "model 50 MB",
        {"model": {"service": "test", "model": "test", "parameters": {"canned_response": BIG}}},
        ("model", "limit"),
    ),
    (
        "model deep",
        {"model": {"service": "test", "model": "test", "parameters": nested(5000)}},
        ("model", "nested"),
    ),
    ("model not a model", {"model": 12}, ("model",)),
    # planner
    ("planner unknown kind", {"planner": {"kind": "nope"}}, ("planner kind", "'nope'")),
    ("planner unknown field", {"planner": {"kind": "round_robin", "zzz": 1}}, ("'zzz'",)),
    (
        "planner deep",
        {"planner": {"kind": "round_robin", "x": nested(10_000)}},
        ("planner", "nested"),
    ),
    ("planner 50 MB", {"planner": {"kind": "round_robin", "x": BIG}}, ("planner", "limit")),
    ("planner a function", {"planner": print}, ("planner",)),
    # termination
    ("termination unknown", {"termination": {"kind": "nope"}}, ("termination kind",)),
    ("termination no kind", {"termination": {}}, ("termination kind",)),
    (
        "termination bad field",
        {"termination": {"kind": "max_turns", "max_turns": "x"}},
        ("max_turns",),
    ),
    ("termination a function", {"termination": lambda state: None}, ("termination",)),
    ("termination 5000 deep", {"termination": deep_termination(5000)}, ("termination", "nested")),
    (
        "termination 50 MB",
        {"termination": {"kind": "text_mention", "text": BIG}},
        ("termination", "limit"),
    ),
    # context
    ("context unknown", {"context": {"zzz": 1}}, ("context policy",)),
    ("context 50 MB", {"context": {"max_messages": BIG}}, ("context", "limit")),
    # retry
    ("retry unknown key", {"retry": {"zzz": 1}}, ("retry", "'zzz'", "max_attempts")),
    ("retry a list", {"retry": [1]}, ("retry", "dict")),
    ("retry a string", {"retry": "fast"}, ("retry",)),
    ("retry attempts 0", {"retry": {"max_attempts": 0}}, ("max_attempts",)),
    ("retry delay inf", {"retry": {"base_delay": float("inf")}}, ("base_delay",)),
    # numbers
    ("seed text", {"seed": "x"}, ("seed",)),
    ("seed 100 bits", {"seed": 2**100}, ("seed", "63 bits")),
    ("max_denials 99", {"max_denials": 99}, ("max_denials",)),
    ("max_output_tokens text", {"max_output_tokens": "x"}, ("max_output_tokens",)),
    ("request_timeout NaN", {"request_timeout": float("nan")}, ("timeout",)),
    ("moderated text", {"moderated": "yes"}, ("moderated",)),
    # placement in an experiment
    ("experiment_id text", {"experiment_id": "x"}, ("experiment_id",)),
    ("experiment_id missing", {"experiment_id": 99_999}, ("experiment_id", "no such experiment")),
    ("experiment_id bool", {"experiment_id": True}, ("experiment_id",)),
    ("condition 50 MB", {"condition": BIG}, ("condition", "limit is 200")),
    ("replicate negative", {"replicate": -1}, ("replicate",)),
    # secrets
    (
        "secret-named trait",
        {"agents": [{"name": "A", "traits": {"api_key": "abc"}}]},
        ("api_key", "secrets are never stored"),
    ),
    (
        "sk- trait value",
        {"agents": [{"name": "A", "traits": {"note": SK}}]},
        ("traits.note", "secrets are never stored"),
    ),
    (
        "api_key in a model",
        {"model": {"service": "openai", "model": "gpt-4o", "api_key": SK}},
        ("api_key",),
    ),
    (
        "sk- in a model parameter",
        {"model": {"service": "test", "model": "test", "parameters": {"canned_response": SK}}},
        ("model", "secrets are never stored"),
    ),
    (
        "sk- in a termination",
        {"termination": {"kind": "text_mention", "text": SK}},
        ("termination", "secrets are never stored"),
    ),
]


@pytest.mark.parametrize(("kwargs", "words"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_hostile_room_configs_are_refused(
    seeded_db: Database, refused: Callable[..., Any], kwargs: dict[str, Any], words: tuple[str, ...]
) -> None:
    arguments = {"name": "r", "agents": AGENTS, "model": OfflineModel(), **kwargs}
    refused(lambda: Room.create(seeded_db, **arguments), *words)


def test_a_condition_object_holding_50_mb_is_refused_fast(
    seeded_db: Database, refused: Callable[..., Any]
) -> None:
    from conversation.termination.conditions import TextMention

    condition = MaxTurns(5) | TextMention(BIG)
    refused(
        lambda: Room.create(seeded_db, name="r", agents=AGENTS, termination=condition),
        "termination",
        "limit",
    )


def test_the_limits_leave_ordinary_rooms_alone(seeded_db: Database) -> None:
    room = Room.create(
        seeded_db,
        name="ordinary",
        agents=[{"name": "Alice", "traits": {"persona": {"age": 40, "likes": ["tea", "maps"]}}}],
        model=OfflineModel(),
        termination={"kind": "any", "parts": [{"kind": "max_turns", "max_turns": 4}]},
        retry={"max_attempts": 2},
        seed=2**62,
    )
    assert room.config.retry.max_attempts == 2
