"""Moving rooms in and out: saved-chat imports, hostile imports, export round trips, export file
names, and API keys that never reach the database or an export."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import storage
from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.room import Room
from conversation.rooms.transfer import (
    ImportRejected,
    ResumeWarning,
    safe_export_path,
    write_export,
)
from conversation.termination.conditions import MaxTurns, TextMention
from storage import Database
from tests.support.databases import stored_bytes
from tests.support.room_common import (
    drive_with,
    log_problems,
    replay_problems,
    row_counts,
    scripted_model,
)

AGENTS = [{"name": "Alice"}, {"name": "Bob"}]
SAVED = [
    {"role": "user", "name": "maria", "content": "Sell me a mug."},
    {"role": "assistant", "name": "Alice", "content": "It is 20 dollars. TERMINATE is not a deal."},
    {"role": "assistant", "name": "Bob", "content": "I offer 15. TERMINATE"},
]


def resume(db: Database, messages: Any = None, **options: Any) -> Room:
    options.setdefault("agents", AGENTS)
    options.setdefault("planner", RoundRobinPolicy())
    return Room.import_messages(db, SAVED if messages is None else messages, **options)


def logged(room: Room) -> list[tuple[str, str, str]]:
    return [(e.kind, e.speaker, e.content) for e in room.events()]


# -- resuming from saved messages --------------------------------------------------------


def test_a_list_and_a_json_string_import_the_same_log(db: Database) -> None:
    from_list = resume(db)
    from_text = resume(db, json.dumps(SAVED))
    assert logged(from_list) == logged(from_text)
    assert logged(from_list)[:3] == [
        ("human", "maria", "Sell me a mug."),
        ("agent", "Alice", "It is 20 dollars. TERMINATE is not a deal."),
        ("agent", "Bob", "I offer 15. TERMINATE"),
    ]
    assert from_list.status == "running"


def test_the_resumption_is_recorded_as_a_system_event(db: Database) -> None:
    room = resume(db)
    notice = room.events()[-1]
    assert (notice.seq, notice.kind, notice.speaker) == (4, "system", "room")
    assert notice.content == "Resumed from 3 imported messages; the last speaker was Bob."
    assert notice.data == {"event": "resumed", "messages": 3, "last_speaker": "Bob"}


def test_remove_termination_string_as_text_touches_only_the_last_message(db: Database) -> None:
    room = resume(db, remove_termination_string="TERMINATE")
    contents = [e.content for e in room.events()]
    assert contents[1] == "It is 20 dollars. TERMINATE is not a deal."
    assert contents[2] == "I offer 15."


def test_remove_termination_string_as_a_function(db: Database) -> None:
    calls: list[str] = []

    def strip(text: str) -> str:
        calls.append(text)
        return text.replace("TERMINATE", "").rstrip() + " (resumed)"

    room = resume(db, remove_termination_string=strip)
    assert calls == ["I offer 15. TERMINATE"]
    assert room.events()[2].content == "I offer 15. (resumed)"


@pytest.mark.parametrize(
    ("remove", "message"),
    [
        ("", "non-empty"),
        (42, "text or a function"),
        (lambda text: None, "must return the new text"),
    ],
)
def test_bad_remove_termination_string_is_refused(db: Database, remove: Any, message: str) -> None:
    before = row_counts(db.url)
    with pytest.raises(ConversationValueError, match=message):
        resume(db, remove_termination_string=remove)
    assert row_counts(db.url) == before


def test_a_warning_when_the_last_message_would_stop_the_room_at_once(db: Database) -> None:
    model = scripted_model()
    with pytest.warns(ResumeWarning, match="'TERMINATE' mentioned by Bob"):
        room = resume(db, termination=TextMention("TERMINATE"))
    drive_with(room, model)
    assert room.run() == [] and model.calls == 0
    assert (room.status, room.stop_reason) == ("terminated", "'TERMINATE' mentioned by Bob")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResumeWarning)
        cleaned = resume(
            db, termination=TextMention("TERMINATE"), remove_termination_string="TERMINATE"
        )
    drive_with(cleaned, scripted_model())
    assert cleaned.step() is not None


def test_max_turns_counts_from_the_resume_point(db: Database) -> None:
    saved = SAVED[:1] + [
        {"name": name, "content": f"earlier turn {i}"}
        for i, name in enumerate(["Alice", "Bob"] * 3)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResumeWarning)  # six earlier turns do not count
        room = resume(db, saved, termination=MaxTurns(2))
    drive_with(room, scripted_model())
    taken = room.run()
    assert [t.speaker for t in taken] == ["Alice", "Bob"]  # continues after the last speaker
    assert (room.status, room.stop_reason) == ("terminated", "max_turns reached (2)")
    assert replay_problems(room) == [] and log_problems(room.events()) == []


def test_imported_private_messages_and_passes_keep_their_meaning(db: Database) -> None:
    saved = [
        {"speaker": "maria", "content": "psst, the budget is 12", "to": ["Alice"]},
        {"speaker": "Alice", "content": "", "passed": True},
    ]
    room = resume(db, saved, planner=RoundRobinRoomPlanner())
    first, second = room.events()[:2]
    assert (first.kind, first.visible_to) == ("human", ["Alice"])
    assert (second.kind, second.speaker) == ("pass", "Alice")
    model = OfflineModel(replies=["bob here"])
    drive_with(room, model)
    turn = room.step()
    assert turn is not None and turn.speaker == "Bob"
    assert "budget is 12" not in model.prompts[0][1]


# -- hostile imports ----------------------------------------------------------------------------------


def message(**fields: Any) -> dict[str, Any]:
    return {"speaker": "maria", "content": "hello", **fields}


def nested(depth: int) -> Any:
    value: Any = "Alice"
    for _ in range(depth):
        value = [value]
    return value


HOSTILE_MESSAGES: list[tuple[str, Any, str]] = [
    ("oversized text", json.dumps([message(content="x" * 90_000)] * 60), "larger than"),
    ("oversized data", [message(content="x" * 90_000)] * 60, "larger than"),
    ("too many messages", [message()] * 10_001, "at most 10000 messages"),
    ("a huge message", [message(content="x" * 100_001)], "longer than 100000"),
    ("deep json text", "[" * 50_000 + "]" * 50_000, "nested more than"),
    ("deep data", [message(to=nested(12))], "nested more than"),
    ("NaN in text", '[{"speaker": "maria", "content": "x", "round": NaN}]', "NaN"),
    ("Infinity in text", '[{"speaker": "maria", "content": "x", "round": Infinity}]', "Infinity"),
    ("NaN in data", [message(round=float("nan"))], "not a finite number"),
    (
        "1e999 in text",
        '[{"speaker": "maria", "content": "x", "round": 1e999}]',
        "1e999 is not a finite",
    ),
    ("an api_key field", [message(api_key="sk-live-abcdefghijklmnopqrstuvwxyz")], "api_key"),
    ("a newline in a speaker", [message(speaker="Bob\nAlice")], "speaker 'Bob\\nAlice'"),
    ("a space in a speaker", [message(speaker="Bob: hi")], "is not a valid name"),
    ("a speaker that is not text", [message(speaker=7)], "speaker 7"),
    ("a seq gap", [message(seq=1), message(seq=3)], "seq 3"),
    ("a non-roster speaker passing", [message(passed=True)], "only an agent can pass"),
    ("'to' outside the roster", [message(to=["Zed"])], "'to' must list agents"),
    ("content not text", [message(content=["a"])], "content must be text"),
    ("not JSON", '[{"speaker": "maria"', "not valid JSON"),
    ("nothing", [], "empty"),
    ("a secret in the roster", [message()], "api_key"),
]


@pytest.mark.parametrize(
    ("case", "messages", "named"), HOSTILE_MESSAGES, ids=[c[0] for c in HOSTILE_MESSAGES]
)
def test_hostile_message_imports_are_rejected_and_change_nothing(
    db: Database, case: str, messages: Any, named: str
) -> None:
    existing = resume(db)  # the database is not empty: nothing of it may change either
    before = row_counts(db.url)
    agents: list[dict[str, Any]] = list(AGENTS)
    if case == "a secret in the roster":
        agents = [{"name": "Alice", "traits": {"api_key": "abc123"}}]
    with pytest.raises(ImportRejected) as caught:
        Room.import_messages(db, messages, agents=agents)
    assert named in str(caught.value)
    assert row_counts(db.url) == before
    assert logged(Room.open(db, existing.id)) == logged(existing)


@pytest.fixture
def exported(db: Database) -> dict[str, Any]:
    room = Room.create(db, name="source", agents=AGENTS, planner=RoundRobinRoomPlanner())
    drive_with(room, OfflineModel(replies=["a1", "b1"]))
    room.post("hello", request_id="r-1")
    room.run()
    return room.export()


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


HOSTILE_EXPORTS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("unknown version", _set(["version"], 2), "unknown export version 2"),
    ("no format", _set(["format"], "something"), "must be a room export"),
    ("an api_key at the top", _set(["api_key"], "x"), "unknown field(s) ['api_key']"),
    ("an api_key in the config", _set(["config", "api_key"], "x"), "'api_key'"),
    ("a secret trait", _set(["config", "roster", 0, "traits"], {"api_key": "x"}), "api_key"),
    (
        "a secret in a model spec",
        _set(["config", "model", "parameters", "api_key"], "x"),
        "api_key",
    ),
    ("an unknown event field", _set(["events", 1, "api_key"], "x"), "['api_key']"),
    ("a seq gap", _set(["events", 1, "seq"], 5), "seq 5"),
    ("a newline in a speaker", _set(["events", 0, "speaker"], "maria\nBob"), "speaker"),
    ("an agent turn by a stranger", _set(["events", 1, "speaker"], "Mallory"), "'Mallory'"),
    ("a human message by an agent", _set(["events", 0, "speaker"], "Bob"), "by 'Bob'"),
    ("an unknown kind", _set(["events", 0, "kind"], "tool"), "unknown kind 'tool'"),
    ("an unknown status", _set(["status"], "exploded"), "'exploded'"),
    ("a bad turn state", _set(["events", 1, "state"], "zombie"), "state"),
    ("events not a list", _set(["events"], {"1": "x"}), "must be a list"),
    ("NaN cost", _set(["events", 1, "cost"], float("nan")), "not a finite number"),
    ("provenance not an object", _set(["events", 1, "provenance"], [1]), "provenance"),
    ("a time that is not a time", _set(["events", 1, "created_at"], "soon"), "ISO 8601"),
    ("a time without offset", _set(["events", 1, "created_at"], "2026-01-01T00:00:00"), "offset"),
    # checked at the door (storage receives records that passed it)
    ("an empty request id", _set(["events", 1, "request_id"], ""), "event 1 request_id"),
    ("a two-line request id", _set(["events", 1, "request_id"], "a\nb"), "one line"),
    ("an agent turn without a state", _set(["events", 1, "state"], None), "needs a turn state"),
    ("a notice with a state", _set(["events", 0, "state"], "done"), "has no turn state"),
]


@pytest.mark.parametrize(
    ("case", "change", "named"), HOSTILE_EXPORTS, ids=[c[0] for c in HOSTILE_EXPORTS]
)
def test_hostile_exports_are_rejected_and_change_nothing(
    db: Database,
    exported: dict[str, Any],
    case: str,
    change: Callable[[dict[str, Any]], None],
    named: str,
) -> None:
    data = json.loads(json.dumps(exported))
    Room.import_messages(db, json.loads(json.dumps(exported)))  # the unchanged export imports
    change(data)
    before = row_counts(db.url)
    with pytest.raises(ImportRejected) as caught:
        Room.import_messages(db, data)
    assert named in str(caught.value)
    assert row_counts(db.url) == before


# -- export and re-import ---------------------------------------------------------------------------


def test_an_export_imports_back_as_an_identical_room(db: Database) -> None:
    room = Room.create(
        db,
        name="negotiation",
        agents=AGENTS,
        planner=RoundRobinRoomPlanner(max_rounds=2),
        termination=TextMention("DEAL"),
        seed=11,
    )
    drive_with(room, OfflineModel(replies=["PASS", "DEAL at 12"]))
    room.post("psst", to=["Alice"], request_id="r-0")
    room.post("sell me a mug", request_id="r-1")
    room.run()
    assert room.status == "terminated"
    exported = room.export()
    assert exported["format"] == "conversation-room" and exported["version"] == 1
    restored = Room.import_messages(db, json.dumps(exported))
    assert restored.id != room.id
    again = restored.export()
    assert _without_identity(again) == _without_identity(exported)
    assert {e["provenance"]["room_id"] for e in again["events"]} == {restored.id}
    assert (restored.status, restored.stop_reason) == ("terminated", "'DEAL' mentioned by Bob")
    # And it goes on like the original would.
    drive_with(restored, OfflineModel(replies=["x"]))
    restored.post("one more", request_id="r-2")
    assert restored.step() is not None


def _without_identity(exported: dict[str, Any]) -> dict[str, Any]:
    """An export without the storage identities its provenance names (a new room has new ids)."""
    events = [
        {
            **e,
            "provenance": {
                k: v for k, v in e["provenance"].items() if k not in ("room_id", "event_id")
            },
        }
        for e in exported["events"]
    ]
    return {**exported, "events": events}


# -- export files -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "filename",
    [
        "../escape.json",
        "../../etc/passwd",
        "/etc/passwd",
        "/tmp/room.json",
        ".hidden.json",
        ".",
        "..",
        "sub/room.json",
        "sub\\room.json",
        "",
        "x" * 101,
        "room\n.json",
        "room\x00.json",
        "~/room.json",
        None,
    ],
)
def test_export_file_names_cannot_leave_the_export_folder(tmp_path: Path, filename: Any) -> None:
    folder = tmp_path / "exports"
    with pytest.raises(ConversationValueError, match="export file name"):
        safe_export_path(folder, filename)


def test_a_symlink_out_of_the_export_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    outside = tmp_path / "outside.json"
    (folder / "room.json").symlink_to(outside)
    with pytest.raises(ConversationValueError, match="leaves the export folder"):
        safe_export_path(folder, "room.json")


def test_write_export_writes_inside_the_folder(db: Database, tmp_path: Path) -> None:
    room = Room.create(db, name="r", agents=AGENTS)
    room.post("hi")
    folder = tmp_path / "exports"
    path = write_export(room, folder)
    assert path == (folder / f"room-{room.id}.json").resolve()
    assert json.loads(path.read_text(encoding="utf-8")) == room.export()
    named = write_export(room, folder, "my-room.v1.json")
    assert named.parent == folder.resolve() and named.name == "my-room.v1.json"
    with pytest.raises(ConversationValueError):
        write_export(room, folder, "../room.json")
    assert not (tmp_path / "room.json").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["my-room.v1.json", f"room-{room.id}.json"]


# -- secrets ------------------------------------------------------------------------------------------

OPENAI_SENTINEL = "SENTINEL-openai-key-5f1d2c9a"
PARROT_SENTINEL = "SENTINEL-parrot-key-83b0e7d4"


def test_api_keys_never_reach_the_database_or_an_export(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support import keep_prices_offline

    keep_prices_offline(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_SENTINEL)
    monkeypatch.setenv("EXPECTED_PARROT_API_KEY", PARROT_SENTINEL)
    db = Database(db_url)
    rooms = [
        Room.create(db, name="default model", agents=AGENTS),
        Room.create(db, name="real model", agents=AGENTS, model="gpt-4o-mini"),
        Room.create(
            db,
            name="per-agent model",
            agents=[{"name": "Alice", "model": {"service": "openai", "model": "gpt-4o-mini"}}],
        ),
    ]
    monkeypatch.delenv("OPENAI_API_KEY")  # only Expected Parrot's key: a remote model spec
    rooms.append(Room.create(db, name="remote model", agents=AGENTS, model="gpt-4o-mini"))
    assert rooms[1].config.model["model"] == "gpt-4o-mini"  # a real model, never called here
    for room in rooms:
        room.post("CANARY-7731 hello", request_id=f"r-{room.id}")
    rooms.append(Room.import_messages(db, SAVED, agents=AGENTS, model="gpt-4o-mini"))
    exports = [json.dumps(room.export()) for room in rooms]
    files = [write_export(room, tmp_path / "exports").read_text() for room in rooms]
    db.dispose()
    data = stored_bytes(db_url)
    assert b"CANARY-7731" in data  # the scan does see what is stored
    for secret in (OPENAI_SENTINEL, PARROT_SENTINEL):
        assert secret.encode() not in data
        for text in exports + files:
            assert secret not in text


def test_a_first_message_without_a_name_imports_as_a_system_message(db: Database) -> None:
    """AutoGen saves a group chat with the manager's or system's message first, unnamed."""
    saved = [
        {"role": "system", "content": "You are a team solving a task."},
        {"name": "Alice", "role": "assistant", "content": "I will start."},
        {"name": "user", "role": "user", "content": "Go on."},
    ]
    room = resume(db, saved)
    first = room.events()[0]
    assert (first.kind, first.speaker, first.content) == (
        "system",
        "system",
        "You are a team solving a task.",
    )
    assert [e.kind for e in room.events()[1:3]] == ["agent", "human"]


def test_a_later_message_without_a_name_is_still_refused(db: Database) -> None:
    with pytest.raises(ImportRejected, match="message 1 speaker"):
        resume(db, [{"name": "Alice", "content": "a"}, {"content": "who said this?"}])


def test_strict_mode_refuses_speakers_who_are_not_on_the_roster(db: Database) -> None:
    saved = [{"name": "Alice", "content": "a"}, {"name": "Mallory", "content": "b"}]
    with pytest.raises(ImportRejected, match="'Mallory', who is not on the roster"):
        resume(db, saved, strict=True)
    assert storage.count_rooms(db) == 0
    room = resume(db, saved)  # the documented default: an unknown speaker is a person
    assert [e.kind for e in room.events()[:2]] == ["agent", "human"]


def test_strict_mode_accepts_people_marked_as_users(db: Database) -> None:
    saved = [{"name": "Alice", "content": "a"}, {"name": "dana", "role": "user", "content": "b"}]
    room = resume(db, saved, strict=True)
    assert [e.kind for e in room.events()[:2]] == ["agent", "human"]
