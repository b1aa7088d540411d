"""The rooms a package holds, built by running them again at packaging time.

For each room the source's export is run again (``rooms.rerun_room`` for an agent-only room,
``rooms.replay_turn`` turn by turn for a room with people) with the source database's model
cache (``SourceCache``): the calls it makes are the package's cache, and any way the run does
not give back the source's turns is noted (the source itself did not replicate).

With scrubbing, the package is a world of its own in which nothing personal was ever said:
people's messages are scrubbed, and the same run is made again over the scrubbed messages
with each original answer scrubbed and stored under the key of the scrubbed prompts
(``TranslatingCache``). The package's transcripts are that run's, its cache that run's calls:
``replicate`` re-running the package gives back exactly its transcripts, and no prompt or
answer in it holds what was scrubbed. Without scrubbing (``--no-scrub``) the world is the
source's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import storage
from conversation.replication.caches import Call, SourceCache, TranslatingCache
from conversation.replication.rooms import (
    agent_only,
    compared,
    is_turn,
    replay_turn,
    rerun_room,
)
from conversation.replication.scrubbing import Scrubbing
from conversation.vocabulary import RoomStatus, TurnState


class RoomMode(StrEnum):
    """How a room is run again (the manifest's words)."""

    RERUN = "rerun"
    REPLAY = "replay"
    SKIPPED = "skipped"


@dataclass(slots=True)
class RoomWorld:
    """One room of a package: its name in the package, what it belongs to, how it is run
    again, its export (the package's world), the calls that answered it, and the differences
    of the packaging run from the source."""

    name: str
    source_id: int
    condition: str | None
    mode: RoomMode
    export: dict[str, Any]
    calls: list[Call] = field(default_factory=list)
    reason: str | None = None
    source_differences: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


def _lookup(db: storage.Database) -> Callable[[list[str]], Mapping[str, Any]]:
    def find(keys: list[str]) -> Mapping[str, Any]:
        return storage.cached_responses(db, keys)

    return find


@dataclass(frozen=True, slots=True)
class RoomSource:
    """A source room to put in a package: its name there, its id, condition, why it is not
    run again (None: it is), and what the package records with it (``meta``)."""

    name: str
    room_id: int
    condition: str | None
    skip: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


def build_rooms(
    source: storage.Database, rooms: Iterable[RoomSource], scrubbing: Scrubbing
) -> list[RoomWorld]:
    """Every room's world (:func:`build_room`), run in one scratch database that is gone after."""
    with tempfile.TemporaryDirectory(prefix="package-") as scratch_dir:
        scratch = storage.Database(f"sqlite:///{scratch_dir}/world.db")
        try:
            return [
                build_room(
                    source,
                    scratch,
                    name=room.name,
                    room_id=room.room_id,
                    condition=room.condition,
                    translate=scrubbing.translate,
                    translate_calls=scrubbing.translate_calls,
                    skip=room.skip,
                    meta=room.meta,
                )
                for room in rooms
            ]
        finally:
            scratch.dispose()


def build_room(
    source: storage.Database,
    scratch: storage.Database,
    *,
    name: str,
    room_id: int,
    condition: str | None,
    translate: Callable[[str], str] | None,
    translate_calls: Callable[[str], str] | None = None,
    skip: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> RoomWorld:
    """The package's world of one source room (see the module doc). ``translate``: the
    scrubber's text function for the room's messages (None: no scrubbing); ``translate_calls``:
    the one for the answers in the model cache (default ``translate``; a second scrubber keeps
    the messages' count apart); ``skip``: why the room is not run again."""
    from conversation.rooms.room import Room

    export = Room(source, room_id).export()
    world = RoomWorld(name, room_id, condition, RoomMode.REPLAY, export, meta=dict(meta or {}))
    if skip is not None:
        world.mode, world.reason = RoomMode.SKIPPED, skip
        world.export = _with_contents(export, _translated_events(export["events"], translate))
        return world
    calls = translate_calls or translate
    if agent_only(export):
        world.mode = RoomMode.RERUN
        _rerun(world, source, scratch, translate, calls)
    else:
        _replay(world, source, scratch, translate, calls)
    return world


def _translated_events(
    events: Sequence[Mapping[str, Any]], translate: Callable[[str], str] | None
) -> list[dict[str, Any]]:
    return [
        {
            **e,
            "content": translate(e["content"]) if translate and e.get("content") else e["content"],
        }
        for e in events
    ]


def _with_contents(export: Mapping[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    return {**export, "events": events}


def _rerun(
    world: RoomWorld,
    source: storage.Database,
    scratch: storage.Database,
    translate: Callable[[str], str] | None,
    calls_translate: Callable[[str], str] | None,
) -> None:
    export = world.export
    raw_cache = SourceCache(_lookup(source))
    events, status = rerun_room(scratch, export, raw_cache)
    world.source_differences = rerun_differences(export, events, status)
    if translate is None:
        world.calls = list(raw_cache.calls)
        return
    first = next(i for i, e in enumerate(export["events"]) if is_turn(e))
    leading = _translated_events(export["events"][:first], translate)
    scrubbed = {**export, "events": [*leading, *export["events"][first:]]}
    world_cache = TranslatingCache(raw_cache.calls, calls_translate or translate)
    replica, _ = rerun_room(scratch, scrubbed, world_cache)
    contents = {e["seq"]: e["content"] for e in replica}
    world.calls = list(world_cache.calls)
    world.export = _with_contents(
        export,
        [
            *leading,
            *(
                {**e, "content": contents.get(e["seq"], translate(e["content"] or ""))}
                for e in export["events"][first:]
            ),
        ],
    )


def _replay(
    world: RoomWorld,
    source: storage.Database,
    scratch: storage.Database,
    translate: Callable[[str], str] | None,
    calls_translate: Callable[[str], str] | None,
) -> None:
    export = world.export
    raw_before: list[dict[str, Any]] = []
    world_before: list[dict[str, Any]] = []
    calls: list[Call] = []
    for event in export["events"]:
        event = dict(event)
        if not (is_turn(event) and event.get("state") == TurnState.DONE):
            raw_before.append(event)
            content = event.get("content")
            world_before.append(
                {**event, "content": translate(content) if translate and content else content}
            )
            continue
        raw_cache = SourceCache(_lookup(source))
        answered = replay_turn(scratch, export, raw_before, event, raw_cache)
        difference = turn_difference(event, answered, raw_cache.misses)
        if difference:
            world.source_differences.append(difference)
        raw_before.append(event)
        if translate is None:
            calls.extend(raw_cache.calls)
            world_before.append(event)
            continue
        world_cache = TranslatingCache(raw_cache.calls, calls_translate or translate)
        again = replay_turn(scratch, export, world_before, event, world_cache)
        calls.extend(world_cache.calls)
        content = again["content"] if again is not None else translate(event["content"] or "")
        world_before.append({**event, "content": content})
    world.calls = calls
    world.export = _with_contents(export, world_before)


def turn_difference(
    expected: Mapping[str, Any], answered: Mapping[str, Any] | None, misses: Sequence[str]
) -> str | None:
    """A line saying how a replayed turn differs from ``expected`` (None: identical)."""
    where = f"seq {expected['seq']} ({expected['speaker']})"
    if answered is None:
        why = f"not in the cache ({misses[0]})" if misses else "did not finish"
        return f"{where}: the turn {why}"
    if answered.get("kind") != expected.get("kind"):
        return f"{where}: a {answered.get('kind')} instead of a {expected.get('kind')}"
    if answered.get("content") != expected.get("content"):
        return f"{where}: replied {_short(answered.get('content'))} instead of {_short(expected.get('content'))}"
    return None


def rerun_differences(
    expected: Mapping[str, Any], events: Sequence[Mapping[str, Any]], status: str
) -> list[str]:
    """The lines saying how a re-run room differs from ``expected`` (its turns, its status)."""
    want = [compared(e) for e in expected["events"] if is_turn(e)]
    got = [compared(e) for e in events if is_turn(e)]
    lines = []
    for index in range(max(len(want), len(got))):
        a = want[index] if index < len(want) else None
        b = got[index] if index < len(got) else None
        if a != b:
            if a is None or b is None:
                lines.append(
                    f"turn {index + 1}: {'missing' if b is None else 'extra'} in the re-run"
                )
            else:
                lines.append(
                    f"seq {a[0]} ({a[2]}): {_short(b[3])} ({b[4]}) instead of {_short(a[3])}"
                )
    if status != expected.get("status") and expected.get("status") in {
        RoomStatus.SETTLED,
        RoomStatus.TERMINATED,
    }:
        lines.append(f"the room ended {status}, not {expected.get('status')}")
    return lines


def _short(text: Any) -> str:
    value = repr(text)
    return value if len(value) <= 80 else value[:77] + "...'"


__all__ = [
    "RoomMode",
    "RoomSource",
    "RoomWorld",
    "build_room",
    "build_rooms",
    "rerun_differences",
    "turn_difference",
]
