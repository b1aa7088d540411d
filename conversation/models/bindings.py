"""Model bindings of this process: which model object answers for a stored model spec.

A room stores its model as a spec (``providers.model_spec``: EDSL's ``to_dict``, never a key), and
every process rebuilds the model from it. The process that created a room also remembers the very
object it was given (by an ``instance`` id in the spec), so a caller's object (its prompt record,
its queued replies) keeps answering there:

- a model that can be rebuilt elsewhere (``providers.portability_problem`` is None) is remembered
  weakly: once the caller drops it, this process rebuilds it from the spec like any other;
- a model that cannot (built on a Python function, a scripted ``OfflineModel``) is accepted only
  with ``in_process_only=True``; its spec says so (``in_process: {"reason": ...}``), this process
  holds it strongly (at most ``MAX_IN_PROCESS_MODELS``, oldest dropped first), and any other
  process answers its turns with ``ModelUnavailableError`` naming the reason, instead of guessing.

The same object given to many rooms is one entry, and ``ModelCache`` keeps at most
``MAX_CACHED_MODELS`` rebuilt models: nothing here grows with the number of rooms created.
"""

from __future__ import annotations

import json
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from conversation.exceptions import ConversationValueError, ModelCallError
from conversation.models.providers.specs import model_spec, portability_problem, resolve_model

MAX_IN_PROCESS_MODELS = 256
MAX_CACHED_MODELS = 64


class ModelUnavailableError(ModelCallError):
    """The room's model exists only in the process that created the room."""


class _Registry:
    """Model objects of this process by instance id: portable ones weakly, in-process-only ones
    strongly (bounded); one id per object."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._weak: dict[str, weakref.ref[Any]] = {}
        self._strong: OrderedDict[str, Any] = OrderedDict()
        self._ids: dict[int, str] = {}

    def remember(self, model: Any, *, strong: bool) -> str:
        with self._lock:
            instance = self._ids.get(id(model))
            if instance is not None and self._get(instance) is model:
                if strong and instance not in self._strong:
                    self._strong[instance] = model
                if instance in self._strong:
                    self._strong.move_to_end(instance)
                return instance
            instance = uuid.uuid4().hex
            self._ids[id(model)] = instance
            if strong:
                self._strong[instance] = model
                while len(self._strong) > MAX_IN_PROCESS_MODELS:
                    old, dropped = self._strong.popitem(last=False)
                    self._forget(old, dropped)
            else:
                key = id(model)
                self._weak[instance] = weakref.ref(model, lambda _r: self._gone(instance, key))
            return instance

    def get(self, instance: str) -> Any:
        with self._lock:
            return self._get(instance)

    @property
    def size(self) -> int:
        with self._lock:
            return len(self._strong) + len(self._weak)

    def _get(self, instance: str) -> Any:
        if instance in self._strong:
            return self._strong[instance]
        ref = self._weak.get(instance)
        return ref() if ref is not None else None

    def _forget(self, instance: str, model: Any) -> None:
        if self._ids.get(id(model)) == instance and instance not in self._weak:
            del self._ids[id(model)]

    def _gone(self, instance: str, key: int) -> None:
        with self._lock:
            self._weak.pop(instance, None)
            if self._ids.get(key) == instance and instance not in self._strong:
                del self._ids[key]


_LIVE_MODELS = _Registry()


def live_model_spec(
    model: Any, *, in_process_only: bool = False, field: str = "model"
) -> dict[str, Any]:
    """The storable spec of ``model``, remembering the object itself for this process.

    Raises ``ConversationValueError`` (naming ``field``) for a model object that cannot be rebuilt
    in another process, unless ``in_process_only`` is true.
    """
    spec = model_spec(model)
    if isinstance(model, str | Mapping):
        return spec
    problem = portability_problem(model)
    if problem is not None and not in_process_only:
        raise ConversationValueError(
            f"{field} {_short(model)} cannot be rebuilt in another process: {problem}. Use a "
            "model EDSL can store (e.g. Model('test', canned_response='...'), OfflineModel(seed=1) "
            "or a model name), or pass in_process_only=True to run the room in this process only "
            "(a separate worker then refuses it)"
        )
    spec["instance"] = _LIVE_MODELS.remember(model, strong=problem is not None)
    if problem is not None:
        spec["in_process"] = {"reason": problem}
    return spec


def is_in_process_only(spec: Mapping[str, Any] | None) -> bool:
    """True for the spec of a model that exists only in the process that created it."""
    return bool(spec) and isinstance(spec.get("in_process"), Mapping)  # type: ignore[union-attr]


class UnavailableModel:
    """Stands in for an in-process-only model in another process: labelled like it, and every
    call raises ``ModelUnavailableError`` with the stored reason (a failed turn, never a guess)."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self._inference_service_ = spec.get("service", "unknown")
        self.model = spec.get("model", "unknown")
        self.parameters = dict(spec.get("parameters") or {})
        reason = (spec.get("in_process") or {}).get("reason", "it exists in one process only")
        self.reason = str(reason)

    async def async_get_response(self, *args: Any, **kwargs: Any) -> Any:
        raise ModelUnavailableError(
            f"this room's model ({self._inference_service_}/{self.model}) exists only in the "
            f"process that created the room: {self.reason}. Run the room there (Room.run or the "
            "app that created it), or create it with a model EDSL can rebuild (e.g. "
            "Model('test', canned_response='...') or a model name)",
            code="in_process_model",
        )


class ModelCache:
    """Models resolved from specs, shared by the turns of a process (building one is not free);
    at most ``MAX_CACHED_MODELS``, least recently used dropped first."""

    def __init__(self) -> None:
        self._models: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, spec: Mapping[str, Any]) -> Any:
        live = _LIVE_MODELS.get(str(spec.get("instance")))
        if live is not None:
            return live
        if is_in_process_only(spec):
            return UnavailableModel(spec)
        key = json.dumps(
            {k: v for k, v in spec.items() if k not in ("instance", "in_process")}, sort_keys=True
        )
        with self._lock:
            model = self._models.get(key)
            if model is not None:
                self._models.move_to_end(key)
                return model
        model = resolve_model(json.loads(key))
        with self._lock:
            self._models[key] = model
            while len(self._models) > MAX_CACHED_MODELS:
                self._models.popitem(last=False)
        return model

    @property
    def size(self) -> int:
        """How many rebuilt models are kept (not ``__len__``: an empty cache must stay truthy,
        callers write ``model_cache or ModelCache()``)."""
        return len(self._models)


def _short(model: Any) -> str:
    label = f"{getattr(model, '_inference_service_', '?')}/{getattr(model, 'model', '?')}"
    return f"{type(model).__name__} ({label})"


__all__ = [
    "MAX_CACHED_MODELS",
    "MAX_IN_PROCESS_MODELS",
    "ModelCache",
    "ModelUnavailableError",
    "UnavailableModel",
    "is_in_process_only",
    "live_model_spec",
]
