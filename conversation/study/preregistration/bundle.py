"""A frozen bundle: what a study promises before it runs (DESIGN.md 12.6).

``freeze(definition)`` holds the definition (its master seed drawn now when it has none), every
model's full identity (service, model name and version where the service gives one, parameters;
the analysis plan's judges too), the prompt every agent of every condition is asked on its
first turn (rendered, so a change of the program's prompt would show), the seeds, and the
analysis plan with its exclusion rules. Its ``hash`` is the sha256 of its canonical JSON (sorted
keys, no spaces) without the hash itself and the freezing time: the same content, the same hash.

:func:`changed_fields` says which frozen fields two definitions differ in (dotted paths);
``OPERATIONAL`` fields (the cap, the redirect) may change without an amendment.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.study.definition.document import (
    StudyDefinition,
    definition_from_dict,
    group_room_config,
)
from conversation.text.limits import MAX_DESIGN_CHARS

BUNDLE_FORMAT = "rooms-study-bundle"
BUNDLE_VERSION = 1
#: Fields that are not part of the promise: running a study may change them freely.
OPERATIONAL = frozenset({"participants.cap", "exit.redirect"})
#: Keys of a model spec that name a process's own object, not the model.
_LOCAL_KEYS = frozenset({"instance", "in_process"})
#: What the hash leaves out (the hash itself, when it was computed).
_UNHASHED = ("hash", "frozen_at")


@dataclass(frozen=True, slots=True)
class Bundle:
    """A frozen bundle: its document (JSON-able) and its content hash."""

    data: Mapping[str, Any]
    hash: str

    @property
    def definition(self) -> StudyDefinition:
        return definition_from_dict(self.data["definition"])

    @property
    def seed(self) -> int:
        return int(self.data["seeds"]["master"])

    def to_dict(self) -> dict[str, Any]:
        return {**json.loads(json.dumps(dict(self.data))), "hash": self.hash}


def content_hash(data: Mapping[str, Any]) -> str:
    """The sha256 of a bundle's canonical JSON, without its hash and freezing time."""
    content = {k: v for k, v in data.items() if k not in _UNHASHED}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def freeze(
    definition: StudyDefinition,
    *,
    seed: int | None = None,
    amendments: list[dict[str, Any]] | None = None,
    now: datetime | None = None,
) -> Bundle:
    """The frozen bundle of ``definition`` (see the module doc). ``seed``: the master seed to
    freeze when the definition names none (default: drawn now); ``amendments``: those already
    made (an amended bundle lists them)."""
    if not isinstance(definition, StudyDefinition):
        raise ConversationValueError("freeze takes a StudyDefinition (load_definition)")
    document = definition.to_dict()
    if document.get("seed") is None:
        document["seed"] = seed if seed is not None else secrets.randbelow(2**62)
    frozen = definition_from_dict(document)
    data: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "definition": document,
        "models": model_identities(frozen),
        "prompts": first_prompts(frozen),
        "seeds": {"master": int(document["seed"]), "groups": "sha256(master:group number)"},
        "analysis": frozen.model.analysis.model_dump(mode="json"),
        "program": _program(),
        "amendments": list(amendments or []),
        "frozen_at": (now or datetime.now(UTC)).isoformat(),
    }
    return Bundle(data=data, hash=content_hash(data))


def _program() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        edsl = version("edsl")
    except PackageNotFoundError:  # pragma: no cover - edsl is a requirement
        edsl = None
    return {"edsl": edsl}


def identity(spec: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A model's full identity from its spec: service, model, version (where given) and every
    parameter; a process's own keys left out."""
    if not spec:
        return None
    kept = {k: v for k, v in spec.items() if k not in _LOCAL_KEYS}
    return {
        "service": kept.get("service"),
        "model": kept.get("model"),
        "version": kept.get("version") or kept.get("model_version"),
        "parameters": kept.get("parameters") or {},
        **{k: v for k, v in kept.items() if k not in {"service", "model", "parameters"}},
    }


def model_identities(definition: StudyDefinition) -> list[dict[str, Any]]:
    """Every model the study asks: each condition's agents (as the room's model or their own)
    and the analysis plan's judges, each with where it is used."""
    from conversation.rooms.config import RoomConfig

    found: list[dict[str, Any]] = []
    for condition in definition.conditions:
        config = RoomConfig.from_dict(
            group_room_config(definition, condition.label, filled=condition.seats)
        )
        for name in config.names:
            found.append(
                {"used_by": f"{condition.label}: {name}", **(identity(config.model_of(name)) or {})}
            )
    judges = definition.model.analysis.judges or [None]
    for index, judge in enumerate(judges):
        spec = _judge_spec(judge)
        found.append({"used_by": f"analysis judge {index + 1}", **(identity(spec) or {})})
    return found


def _judge_spec(judge: Any) -> dict[str, Any]:
    from conversation.models import default_model, model_spec, resolve_model

    model = default_model() if judge is None else resolve_model(judge)
    return dict(model_spec(model))


def first_prompts(definition: StudyDefinition) -> dict[str, dict[str, dict[str, str]]]:
    """``{condition: {agent: {"system", "user"}}}``: the prompts each agent (stand-ins
    included) is asked on its first turn after the opening, rendered by the engine's own
    prompt builder."""
    from conversation.rooms.config import RoomConfig
    from conversation.rooms.log import log_view
    from conversation.rooms.prompt import build_turn_prompt
    from conversation.vocabulary import EventKind
    from storage.tables import Event

    template = definition.data["experiment"]["template"]
    opening = str(template.get("opening") or "")
    host = definition.model.room.host
    rows = [Event(room_id=0, seq=1, kind=EventKind.HUMAN, speaker=host, content=opening)]
    prompts: dict[str, dict[str, dict[str, str]]] = {}
    for condition in definition.conditions:
        config = RoomConfig.from_dict(
            group_room_config(definition, condition.label, filled=condition.seats)
        )
        view = log_view(config.names, rows)
        prompts[condition.label] = {}
        for name in config.names:
            prompt = build_turn_prompt(config, view, name)
            prompts[condition.label][name] = {
                "system": prompt.system_prompt,
                "user": prompt.user_prompt,
            }
    return prompts


def load_bundle(data: Any) -> Bundle:
    """A bundle from its document, its hash checked against its content
    (``ConversationValueError`` when it was altered or is not a bundle)."""
    if not isinstance(data, Mapping) or data.get("format") != BUNDLE_FORMAT:
        raise ConversationValueError(
            f"not a frozen study bundle (its 'format' must be {BUNDLE_FORMAT!r}); make one with "
            "`python -m conversation.study freeze FILE`"
        )
    if data.get("version") != BUNDLE_VERSION:
        raise ConversationValueError(f"bundle version {data.get('version')!r} is not supported")
    stated = data.get("hash")
    actual = content_hash(data)
    if stated != actual:
        raise ConversationValueError(
            f"the bundle's content does not match its hash ({str(stated)[:12]}... stated, "
            f"{actual[:12]}... computed): it was changed after it was frozen"
        )
    content = {k: v for k, v in data.items() if k != "hash"}
    bundle = Bundle(data=content, hash=actual)
    bundle.definition  # noqa: B018 - the definition inside is checked like any other
    return bundle


def read_bundle(path: str | Path) -> Bundle:
    """A bundle from a JSON file (see :func:`load_bundle`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConversationValueError(
            f"cannot read the bundle {str(path)!r}: {exc.strerror}"
        ) from None
    if len(text) > 4 * MAX_DESIGN_CHARS:
        raise ConversationValueError(f"the bundle {str(path)!r} is too large")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConversationValueError(f"the bundle {str(path)!r} is not JSON: {exc}") from None
    return load_bundle(data)


def is_bundle_file(path: str | Path) -> bool:
    """Whether ``path`` holds a frozen bundle (a JSON document of the bundle's format)."""
    path = Path(path)
    if path.suffix.lower() != ".json":
        return False
    try:
        head = path.read_text(encoding="utf-8")[:4096]
    except OSError:
        return False
    return f'"{BUNDLE_FORMAT}"' in head


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The frozen fields (dotted paths) in which two definitions differ; a list is one field."""
    changes: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for key in sorted(set(a) | set(b)):
                walk(a.get(key), b.get(key), f"{path}.{key}" if path else str(key))
        elif a != b and path not in OPERATIONAL:
            changes.append(path)

    walk(dict(before), dict(after), "")
    return changes


__all__ = [
    "BUNDLE_FORMAT",
    "OPERATIONAL",
    "Bundle",
    "changed_fields",
    "content_hash",
    "first_prompts",
    "freeze",
    "identity",
    "is_bundle_file",
    "load_bundle",
    "model_identities",
    "read_bundle",
]
