"""Helpers shared by the durable-room tests and their child processes (``tests/support/room_*.py``).

- ``FixedModels`` / ``drive_with``: let a ``Room`` (or an ``Engine``) answer with one given model
  object. A room stores a model *spec*, and a scripted ``OfflineModel`` loses its script when it is
  rebuilt from the spec, so tests that script replies or record prompts install the model this way.
- ``scripted_reply``: a deterministic reply computed from the prompts only, with @-mentions, so a
  room resumed in another process answers exactly as an uncrashed one would.
- ``log_problems`` / ``replay_problems``: the invariants every room must keep (contiguous seqs, no
  duplicate request ids, at most one open turn, agent speakers equal to the planner's replay).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import storage  # noqa: E402
from conversation.models import OfflineModel  # noqa: E402
from conversation.models.bindings import ModelCache  # noqa: E402
from conversation.planning.planner import plan_turn  # noqa: E402
from conversation.rooms.log import OPEN_STATES, log_view  # noqa: E402
from conversation.rooms.room import Room  # noqa: E402
from tests.support import databases  # noqa: E402

ROSTER = ("Alice", "Bob", "Cara")
_SPEAKER = re.compile(r"You are ([A-Za-z0-9_.\-]+)\.")


class FixedModels(ModelCache):
    """A model cache that answers every spec with one model object."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def get(self, spec: Mapping[str, Any]) -> Any:
        return self.model


def drive_with(room: Room, model: Any, *, lease_ttl: float = 60.0) -> Room:
    """Make ``room.step()``/``run()`` call ``model`` (the room's own driver, with its settings)."""
    engine = room._turn_engine()
    engine.models = FixedModels(model)
    engine.lease_ttl = lease_ttl
    return room


def speaker_of(system_prompt: str) -> str:
    found = _SPEAKER.search(system_prompt)
    return found.group(1) if found else "someone"


def scripted_reply(user_prompt: str, system_prompt: str) -> str:
    """A reply that depends on the two prompts only (so a resumed turn says the same thing).

    About a third of replies mention the next agent of ``ROSTER`` (to exercise @-mention rounds).
    """
    speaker = speaker_of(system_prompt)
    digest = hashlib.sha256((system_prompt + "\x00" + user_prompt).encode()).hexdigest()
    text = f"{speaker} note {digest[:10]}"
    if int(digest[10:12], 16) % 3 == 0:
        others = [name for name in ROSTER if name != speaker]
        text += f" @{others[int(digest[12:14], 16) % len(others)]} what do you think?"
    return text


def scripted_model(record: Path | None = None, **settings: Any) -> OfflineModel:
    """An ``OfflineModel`` answering with ``scripted_reply``; optionally appending each prompt
    (as a JSON line) to ``record`` *before* answering, so a process killed later leaves it."""

    def reply(user_prompt: str, system_prompt: str) -> str:
        if record is not None:
            with open(record, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"system": system_prompt, "user": user_prompt}) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        return scripted_reply(user_prompt, system_prompt)

    return OfflineModel(func=reply, **settings)


class SlowCallModel:
    """Wraps a model: each call first runs ``on_call()`` then awaits ``hold`` seconds (the event
    loop keeps running, so a lease renewer keeps renewing), then asks the wrapped model."""

    def __init__(self, model: Any, *, hold: float, on_call: Any = None) -> None:
        self._model = model
        self._hold = hold
        self._on_call = on_call

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    async def async_get_response(self, *args: Any, **kwargs: Any) -> Any:
        if self._on_call is not None:
            self._on_call()
        await asyncio.sleep(self._hold)
        return await self._model.async_get_response(*args, **kwargs)


def warm_up() -> None:
    """Load what a first model call loads (EDSL's cache, prompt machinery), so a child process
    with a short lease does not lose it to one-time start-up costs before its first claim."""
    from conversation.models import ask

    asyncio.run(ask(OfflineModel(), user_prompt="warm", system_prompt="up"))


# -- invariants -------------------------------------------------------------------------------------


def log_problems(rows: list[Any]) -> list[str]:
    """Contiguous seqs from 1, unique request ids, at most one open turn."""
    problems = []
    seqs = [r.seq for r in rows]
    if seqs != list(range(1, len(rows) + 1)):
        problems.append(f"seqs are not contiguous: {seqs}")
    ids = [r.request_id for r in rows if r.request_id is not None]
    if len(ids) != len(set(ids)):
        problems.append(f"duplicate request ids: {ids}")
    open_turns = [r.seq for r in rows if r.kind in ("agent", "pass") and r.state in OPEN_STATES]
    if len(open_turns) > 1:
        problems.append(f"more than one open turn: {open_turns}")
    return problems


def replay_problems(room: Room, rows: list[Any] | None = None) -> list[str]:
    """Each agent turn (after an import's resume point) is who the planner names, replayed from
    the events before it, in the round it names."""
    config = room.config
    rows = room.events() if rows is None else rows
    view = log_view(config.names, rows)
    planner = config.planner_object()
    problems = []
    for position, (event, seq) in enumerate(zip(view.events, view.seqs, strict=True)):
        if position < view.resumed_at or event.kind != "message":
            continue
        if event.speaker not in config.names:
            continue
        planned = plan_turn(planner, config.names, view.events[:position])
        got = (event.speaker, event.round)
        if planned is None or (planned.speaker, planned.round) != got:
            problems.append(f"seq {seq}: {got} but the planner says {planned}")
    return problems


def transcript_of(rows: list[Any]) -> list[tuple[str, str, str, int, str | None]]:
    """What must be equal between a crashed-and-resumed room and an uncrashed one."""
    return [(r.kind, r.speaker, r.content, r.round, r.state) for r in rows]


def integrity(target: str | Path) -> str:
    """``"ok"`` for a sound database: a SQLite file path, or any database URL (PostgreSQL is
    checked with amcheck); see :func:`tests.support.databases.integrity`."""
    return databases.integrity(target)


def row_counts(target: str | Path) -> dict[str, int]:
    """Rows in ``rooms``, ``events`` and ``leases``: a SQLite file path or any database URL."""
    return databases.row_counts(target)


def db_path(url: str) -> Path:
    """The file of a SQLite URL (SQLite only: the checks above take URLs for either backend)."""
    return Path(url.removeprefix("sqlite:///"))


def child_env(home: Path, db_url: str, **extra: str) -> dict[str, str]:
    """A hermetic environment for a child process: its own HOME, no provider keys."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY") and key != "CONVERSATION_FAULT_POINT"
    }
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        ROOMS_DATA_DIR=str(home / "rooms-data"),
        ROOMS_DATABASE_URL=db_url,
        EDSL_FETCH_TOKEN_PRICES="False",
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


__all__ = [
    "ROOT",
    "ROSTER",
    "FixedModels",
    "SlowCallModel",
    "child_env",
    "db_path",
    "drive_with",
    "integrity",
    "log_problems",
    "replay_problems",
    "row_counts",
    "scripted_model",
    "scripted_reply",
    "speaker_of",
    "storage",
    "transcript_of",
    "warm_up",
]
