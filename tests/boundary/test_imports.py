"""``Room.import_messages``: message lists (docs/design.md, "Resuming a group chat") and room exports are untrusted input.

Every refusal is an ``ImportRejected`` naming the problem, fast, with nothing stored: all or
nothing, whichever message or event is the bad one. Hypothesis throws arbitrary JSON at it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conversation.exceptions import ConversationValueError, ImportRejected
from conversation.models import OfflineModel
from conversation.rooms.room import Room
from storage import Database
from tests.boundary.conftest import AGENTS, BIG
from tests.support.db_state import snapshot

SK = "sk-" + "a1B2c3D4" * 4
GOOD = [
    {"role": "user", "name": "maria", "content": "Sell me a mug."},
    {"role": "assistant", "name": "Alice", "content": "It is 20 dollars."},
]
BIG_BYTES = b"[" + b" " * 50_000_000 + b"]"
BIG_TEXT = "[" + " " * 50_000_000 + "]"


def deep_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def with_bad(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Good messages, then one bad one: nothing of the good ones may be stored."""
    return [*GOOD, message]


#: (id, messages, words the error must contain)
HOSTILE_MESSAGES: list[tuple[str, Any, tuple[str, ...]]] = [
    ("non-UTF-8 bytes", b'[{"name": "maria", "content": "\xff"}]', ("UTF-8",)),
    ("50 MB of bytes", BIG_BYTES, ("50,000,002 bytes", "5,000,000")),
    ("50 MB of text", BIG_TEXT, ("larger than 5,000,000",)),
    ("50 MB in a message", [{"name": "maria", "content": BIG}], ("larger than",)),
    ("too many messages", [GOOD[0]] * 20_001, ("at most 10000 messages",)),
    ("deep JSON text", "[" * 100_000 + "]" * 100_000, ("nested more than",)),
    ("deep data", deep_list(100_000), ("nested more than",)),
    ("a set", {1, 2}, ("plain JSON data", "set")),
    ("a bad message last", with_bad({"name": "maria", "content": 5}), ("message 2", "content")),
    ("an api_key field", with_bad({"name": "maria", "content": "x", "api_key": SK}), ("api_key",)),
    ("a person named room", with_bad({"name": "room", "content": "x"}), ("message 2", "notices")),
    (
        "a person named System",
        with_bad({"name": "System", "content": "x"}),
        ("message 2", "notices"),
    ),
    (
        "an agent's name in lower case",
        with_bad({"name": "alice", "content": "x"}),
        ("agent 'Alice'",),
    ),
    (
        "a system message by an agent",
        with_bad({"role": "system", "name": "Bob", "content": "x"}),
        ("message 2", "system message", "'Bob'"),
    ),
    ("NUL in content", with_bad({"name": "maria", "content": "a\x00b"}), ("NUL",)),
    ("a newline in a name", with_bad({"name": "maria\nAlice", "content": "x"}), ("speaker",)),
]


@pytest.mark.parametrize(
    ("messages", "words"), [c[1:] for c in HOSTILE_MESSAGES], ids=[c[0] for c in HOSTILE_MESSAGES]
)
def test_hostile_message_lists_are_refused_whole(
    seeded_db: Database, refused: Callable[..., Any], messages: Any, words: tuple[str, ...]
) -> None:
    refused(
        lambda: Room.import_messages(seeded_db, messages, agents=AGENTS, model=OfflineModel()),
        *words,
        error=ImportRejected,
    )


def test_an_imported_room_name_of_50_mb_is_refused(
    seeded_db: Database, refused: Callable[..., Any]
) -> None:
    refused(
        lambda: Room.import_messages(seeded_db, GOOD, agents=AGENTS, name=BIG),
        "name",
        "limit is 200",
        error=ImportRejected,
    )


# -- exports ------------------------------------------------------------------------------------


def exported(db: Database) -> dict[str, Any]:
    return copy.deepcopy(Room.open(db, 1).export())


def agent_event(export: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in export["events"] if e["kind"] == "agent")


def _set(target: Callable[[dict[str, Any]], dict[str, Any]], key: str, value: Any) -> Any:
    def apply(export: dict[str, Any]) -> None:
        target(export)[key] = value

    return apply


def _last(export: dict[str, Any]) -> dict[str, Any]:
    return export["events"][-1]


def _human(export: dict[str, Any]) -> dict[str, Any]:
    return export["events"][0]


def _top(export: dict[str, Any]) -> dict[str, Any]:
    return export


def _config(export: dict[str, Any]) -> dict[str, Any]:
    return export["config"]


def _model(export: dict[str, Any]) -> dict[str, Any]:
    return export["config"]["model"]


def _add_system_event(speaker: str) -> Callable[[dict[str, Any]], None]:
    def apply(export: dict[str, Any]) -> None:
        events = export["events"]
        events.append(
            {"seq": len(events) + 1, "kind": "system", "speaker": speaker, "content": "x"}
        )

    return apply


#: (id, a change to a real export, words the error must contain)
HOSTILE_EXPORTS: list[tuple[str, Callable[[dict[str, Any]], None], tuple[str, ...]]] = [
    (
        "a secret key in event data",
        _set(agent_event, "data", {"api_key": "abc"}),
        ("data.api_key",),
    ),
    (
        "an sk- value in event data",
        _set(agent_event, "data", {"note": SK}),
        ("data.note", "secrets"),
    ),
    (
        "an sk- value in an event error",
        _set(agent_event, "error", {"type": "X", "message": f"bad key {SK}"}),
        ("error.message", "secrets"),
    ),
    ("an sk- model label", _set(agent_event, "model", SK), ("model", "secrets")),
    ("an sk- request id", _set(_human, "request_id", SK), ("request_id", "secrets")),
    ("an api_key in the model spec", _set(_model, "api_key", SK), ("api_key",)),
    ("a token in model parameters", _set(_model, "parameters", {"token": "abc"}), ("config",)),
    ("an unknown model service", _set(_model, "service", "nope"), ("model",)),
    ("a model parameter it lacks", _set(_model, "parameters", {"zzz": 1}), ("model", "zzz")),
    ("a system event by an agent", _add_system_event("Alice"), ("system event", "'Alice'")),
    ("a system event by a lower-case agent", _add_system_event("bob"), ("system event", "'Bob'")),
    ("a human event named room", _set(_human, "speaker", "room"), ("event 0", "notices")),
    ("a bad event last", _set(_last, "content", 5), ("content must be text",)),
    ("NUL in an event", _set(_last, "content", "a\x00b"), ("NUL",)),
    (
        "a stop reason of 5,000 characters",
        _set(_top, "stop_reason", "x" * 5000),
        ("stop_reason", "1,000"),
    ),
    ("a room name of 1,000 characters", _set(_top, "name", "x" * 1000), ("name", "limit is 200")),
    ("a config of 50 MB", _set(_config, "prompt_template", BIG), ("larger than",)),
    ("retry with an unknown key", _set(_config, "retry", {"zzz": 1}), ("retry", "'zzz'")),
    (
        "a template with __class__",
        _set(_config, "prompt_template", "{{ speaker_name.__class__ }}"),
        ("prompt_template",),
    ),
    ("a seed of 100 bits", _set(_config, "seed", 2**100), ("seed",)),
]


@pytest.mark.parametrize(
    ("mutate", "words"), [c[1:] for c in HOSTILE_EXPORTS], ids=[c[0] for c in HOSTILE_EXPORTS]
)
def test_hostile_exports_are_refused_whole(
    seeded_db: Database,
    refused: Callable[..., Any],
    mutate: Callable[[dict[str, Any]], None],
    words: tuple[str, ...],
) -> None:
    export = exported(seeded_db)
    mutate(export)
    refused(lambda: Room.import_messages(seeded_db, export), *words, error=ImportRejected)


def test_an_export_as_non_utf8_bytes_is_refused(
    seeded_db: Database, refused: Callable[..., Any]
) -> None:
    raw = json.dumps(exported(seeded_db)).encode("utf-16")
    refused(lambda: Room.import_messages(seeded_db, raw), "UTF-8", error=ImportRejected)


def test_a_clean_export_still_imports(seeded_db: Database) -> None:
    room = Room.import_messages(seeded_db, json.dumps(exported(seeded_db)).encode())
    assert [e.content for e in room.events()] == [
        e.content for e in Room.open(seeded_db, 1).events()
    ]


# -- arbitrary JSON -------------------------------------------------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(
            st.sampled_from(
                ["name", "speaker", "content", "role", "to", "seq", "round", "passed", "x"]
            )
            | st.text(max_size=8),
            inner,
            max_size=5,
        )
    ),
    max_leaves=40,
)
MESSAGE = st.fixed_dictionaries(
    {"name": st.sampled_from(["maria", "Alice", "Bob", "room", "alice", "x y"]) | JSON},
    optional={
        "content": st.text(max_size=40) | JSON,
        "role": st.sampled_from(["user", "system", "assistant"]) | JSON,
        "to": st.lists(st.sampled_from(["Alice", "Bob", "Zed"]), max_size=3) | JSON,
        "passed": st.booleans() | JSON,
        "round": st.integers(min_value=-2, max_value=3) | JSON,
    },
)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.one_of(JSON, st.lists(MESSAGE, min_size=1, max_size=6)), as_text=st.booleans())
def test_arbitrary_json_is_imported_or_refused_typed(
    seeded_db: Database, data: Any, as_text: bool
) -> None:
    before = snapshot(seeded_db)
    payload = json.dumps(data) if as_text else data
    try:
        Room.import_messages(seeded_db, payload, agents=AGENTS, model=OfflineModel())
    except ConversationValueError:
        assert snapshot(seeded_db) == before
