"""Model bindings of this process: the model objects rooms were created with, and the models
rebuilt from stored specs, shared by the turns a process takes (building one is not free)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from conversation.models.providers import model_spec, resolve_model

#: Model objects handed to ``Room.create`` in this process, by the ``instance`` id stored in the
#: room's model spec. A scripted ``OfflineModel`` (queued replies, a reply function) cannot be
#: rebuilt from a spec, so the process that created the room keeps using the very object; any
#: other process rebuilds the model from the spec (for a scripted offline model: its own words).
_LIVE_MODELS: dict[str, Any] = {}


def live_model_spec(model: Any) -> dict[str, Any]:
    """The storable spec of ``model``, remembering the object itself for this process."""
    spec = model_spec(model)
    if not isinstance(model, str | Mapping):
        instance = uuid.uuid4().hex
        _LIVE_MODELS[instance] = model
        spec["instance"] = instance
    return spec


class ModelCache:
    """Models resolved from specs, shared by the turns of a process (building one is not free)."""

    def __init__(self) -> None:
        self._models: dict[str, Any] = {}

    def get(self, spec: Mapping[str, Any]) -> Any:
        live = _LIVE_MODELS.get(str(spec.get("instance")))
        if live is not None:
            return live
        key = json.dumps(spec, sort_keys=True)
        model = self._models.get(key)
        if model is None:
            model = resolve_model({k: v for k, v in spec.items() if k != "instance"})
            self._models[key] = model
        return model


__all__ = ["ModelCache", "live_model_spec"]
