"""Models serialize the EDSL way and are rebuilt in another process; the ones that cannot be are
refused (or kept in-process only, and refused by a worker with a stored reason); the live-model
registry stays bounded; aiohttp sessions are closed before their loop."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from edsl import Agent, AgentList, Model
from edsl.language_models import LanguageModel

from conversation import Conversation, ConversationList, Room
from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel, bindings, model_spec, resolve_model
from conversation.models.bindings import ModelCache, live_model_spec
from conversation.models.providers.specs import edsl_dict, portability_problem, spec_from_edsl
from conversation.planning.planner import RoundRobinRoomPlanner
from conversation.rooms.config import RoomConfig
from storage import Database
from tests.support.room_common import ROOT, child_env

AGENTS = AgentList([Agent(name="Alice", traits={"role": "buyer"}), Agent(name="Bob", traits={})])


@pytest.fixture
def db(db_url: str) -> Database:
    return Database(db_url)


def test_edsls_test_model_round_trips_through_its_own_dict() -> None:
    model = Model("test", canned_response="hello from EDSL")
    spec = model_spec(model)
    assert spec == {
        "service": "test",
        "model": "test",
        "parameters": {"temperature": 0.5, "canned_response": "hello from EDSL"},
    }
    assert edsl_dict(spec) == {
        "model": "test",
        "parameters": spec["parameters"],
        "inference_service": "test",
    }
    rebuilt = resolve_model(json.loads(json.dumps(spec)))
    assert isinstance(rebuilt, LanguageModel) and rebuilt.canned_response == "hello from EDSL"
    assert spec_from_edsl(model.to_dict()) == spec  # the version fields are ignored
    assert portability_problem(model) is None


def test_a_served_model_keeps_its_url_and_options_but_never_a_key(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-secret-value")
    by_name = resolve_model("openai_compatible/smollm2")
    edsl_model = Model("smollm2", service_name="openai_compatible", temperature=0.1)
    for model in (by_name, edsl_model):
        spec = model_spec(model)
        assert spec["base_url"] == "http://127.0.0.1:9/v1"
        assert "sk-secret-value" not in json.dumps(spec)
    stored = json.loads(json.dumps(model_spec(edsl_model)))
    assert stored["parameters"]["temperature"] == 0.1
    monkeypatch.delenv("OPENAI_COMPATIBLE_BASE_URL")
    again = resolve_model(stored)  # another process: no variable
    assert again.base_url == "http://127.0.0.1:9/v1" and again.temperature == 0.1


def test_conversations_and_lists_carry_an_edsl_model(tmp_path: Path) -> None:
    model = Model("test", canned_response="Fine by me.")
    conversation = Conversation(AGENTS, max_turns=2, default_model=model)
    conversation.converse()
    data = json.loads(json.dumps(conversation.to_dict()))
    restored = Conversation.from_dict(data)
    assert restored.default_model.canned_response == "Fine by me."
    batch = ConversationList([Conversation(AGENTS, max_turns=1, default_model=model)])
    again = ConversationList.from_dict(json.loads(json.dumps(batch.to_dict())))
    again.run()
    assert again.conversations[0].transcript[0]["text"] == "Fine by me."


def test_a_room_with_edsls_test_model_runs_in_the_worker_process(
    db: Database, db_url: str, tmp_path: Path
) -> None:
    room = Room.create(
        db,
        name="edsl test model",
        agents=AGENTS,
        planner=RoundRobinRoomPlanner(max_rounds=1),
        model=Model("test", canned_response="Deal at 7."),
    )
    assert "instance" in room.config.model and not room.config.in_process_only
    room.post("price?")
    db.dispose()
    done = subprocess.run(
        [sys.executable, "-m", "conversation.worker", "--db", db_url, "--until-idle"]
        + ["--poll", "0.05"],
        cwd=ROOT,
        env=child_env(tmp_path / "home", db_url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    again = Room.open(Database(db_url), room.id)
    assert again.status == "settled"
    assert [(e.speaker, e.content) for e in again.events()][1:] == [
        ("Alice", "Deal at 7."),
        ("Bob", "Deal at 7."),
    ]
    assert "Unclosed client session" not in done.stderr


@pytest.mark.parametrize(
    "model",
    [
        Model("test", func=lambda user_prompt, system_prompt, files: "computed"),
        OfflineModel(func=lambda user_prompt, system_prompt: "computed"),
        OfflineModel(replies=["queued"]),
    ],
    ids=["edsl-func", "offline-func", "offline-queue"],
)
def test_a_model_that_cannot_be_rebuilt_is_refused(db: Database, model) -> None:
    with pytest.raises(ConversationValueError, match="in_process_only=True") as caught:
        Room.create(db, name="refused", agents=AGENTS, model=model)
    assert "cannot be rebuilt in another process" in str(caught.value)
    agent = Agent(name="Cara", traits={})
    agent.model = model
    with pytest.raises(ConversationValueError, match="model of 'Cara'"):
        Room.create(db, name="refused", agents=AgentList([agent]))
    assert Database.__name__ and not db_has_rooms(db)


def db_has_rooms(db: Database) -> bool:
    import storage

    return bool(storage.list_rooms(db))


def test_in_process_only_runs_here_and_the_worker_refuses_with_a_reason(
    db: Database, db_url: str, tmp_path: Path
) -> None:
    model = Model("test", func=lambda user_prompt, system_prompt, files: "from a function")
    here = Room.create(
        db,
        name="here",
        agents=AGENTS,
        planner=RoundRobinRoomPlanner(max_rounds=1),
        model=model,
        in_process_only=True,
    )
    assert here.config.in_process_only
    here.post("go")
    here.run()
    assert [e.content for e in here.events()][1:] == ["from a function"] * 2
    elsewhere = Room.create(
        db,
        name="elsewhere",
        agents=AGENTS,
        planner=RoundRobinRoomPlanner(max_rounds=1),
        model=model,
        in_process_only=True,
    )
    elsewhere.post("go")
    db.dispose()
    done = subprocess.run(
        [sys.executable, "-m", "conversation.worker", "--db", db_url, "--until-idle"]
        + ["--poll", "0.05"],
        cwd=ROOT,
        env=child_env(tmp_path / "home", db_url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    room = Room.open(Database(db_url), elsewhere.id)
    assert room.status == "failed"
    assert "exists only in the process that created the room" in (room.stop_reason or "")
    assert "Python function" in (room.stop_reason or "")
    (turn,) = room.turns()
    assert turn.error["code"] == "in_process_model"
    assert len(room.events()) == 2  # no message was invented


def test_the_live_model_registry_is_bounded(monkeypatch) -> None:
    monkeypatch.setattr(bindings, "MAX_IN_PROCESS_MODELS", 5)
    before = bindings._LIVE_MODELS.size
    shared = Model("test", canned_response="x")
    specs = [live_model_spec(shared) for _ in range(50)]
    assert len({s["instance"] for s in specs}) == 1  # one object, one entry
    scripted = [OfflineModel(replies=["a"]) for _ in range(20)]
    kept = [live_model_spec(m, in_process_only=True) for m in scripted]
    assert bindings._LIVE_MODELS.size <= before + 1 + 5
    cache = ModelCache()
    assert cache.get(kept[-1]) is scripted[-1]  # the newest are kept
    assert isinstance(cache.get(kept[0]), bindings.UnavailableModel)  # the oldest dropped
    for i in range(bindings.MAX_CACHED_MODELS + 10):
        cache.get({"service": "offline", "parameters": {"seed": i}})
    assert cache.size <= bindings.MAX_CACHED_MODELS
    assert ModelCache()  # an empty cache is truthy (`model_cache or ModelCache()`)


def test_a_spec_stored_before_reads_the_same() -> None:
    old = {
        "service": "offline",
        "model": "offline",
        "parameters": {"seed": 3},
        "instance": "0123456789abcdef0123456789abcdef",  # a process long gone
    }
    model = ModelCache().get(old)
    assert isinstance(model, OfflineModel) and model.parameters["seed"] == 3
    config = RoomConfig.from_dict(
        {
            "version": 1,
            "roster": [{"name": "Alice", "traits": {}, "instruction": None, "model": None}],
            "planner": RoundRobinRoomPlanner().to_dict(),
            "model": old,
        }
    )
    assert config.max_output_tokens == 512 and config.context_window is None


LEAK_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from tests.support.openai_server import OpenAICompatibleServer
from edsl import Agent, AgentList
from conversation import Conversation
from conversation.analysis.questions import analyze, question_from_spec
from conversation.models import resolve_model
with OpenAICompatibleServer(default_text="Yes") as server:
    model = resolve_model(
        {{"service": "openai_compatible", "model": "tiny", "base_url": server.base_url}}
    )
    agents = AgentList([Agent(name="Alice", traits={{}}), Agent(name="Bob", traits={{}})])
    Conversation(agents, max_turns=2, default_model=model).converse()
    question = question_from_spec({{"type": "yes_no", "name": "d", "text": "Deal?"}})
    print(analyze(question, [{{"transcript": "x"}}], model=model).rows[0]["d"])
"""


def test_no_unclosed_aiohttp_session_at_exit(tmp_path: Path) -> None:
    script = tmp_path / "leak.py"
    script.write_text(LEAK_SCRIPT.format(root=str(ROOT)))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        env=child_env(tmp_path / "home", "sqlite:///" + str(tmp_path / "x.db")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("Yes")
    assert "Unclosed client session" not in done.stderr
    assert "Unclosed connector" not in done.stderr
