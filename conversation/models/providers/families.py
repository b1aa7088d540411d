"""What each family of providers can do and needs: one row per family, read everywhere.

After pydantic-ai's ``profiles/`` (one ``ModelProfile`` per family of models, saying how requests
to them are made, independent of the client): a ``Family`` holds the facts about the EDSL services
of one kind of provider that the code would otherwise spell as sets of service names. Every
question "does this model's service ...?" is a field of its row: ``family_of(model).stop_sequences``.

- ``OPENAI``: OpenAI's own models, called as chat completions with the ``openai`` client;
- ``OWN_SERVER``: a server the user runs (llama.cpp, vLLM, Ollama) at a URL of their choosing,
  spoken to the same way;
- ``IN_PROCESS``: the offline model and EDSL's test model, answered in this process;
- ``HOSTED``: every other provider (EDSL's own SDK clients), the default for a service not listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True, kw_only=True, slots=True)
class Family:
    """What the services of one family of providers can do and need. The defaults describe a
    hosted provider reached through its own SDK."""

    chat_completions: bool = False
    """Its models' calls are EDSL's OpenAI chat completions (the ``openai`` client): a room's
    turn is sent as chat turns (``chat_shape``) and can stream (``streaming``)."""
    at_a_url: bool = False
    """It answers at a URL of the user's choosing: a spec's ``base_url``, stored with the room."""
    key_optional: bool = False
    """It may need no key (a local server): EDSL's key check is skipped when none is set."""
    window_reported: bool = False
    """Its context window is how the server was started (asked of the server, else
    ``ROOMS_CONTEXT_WINDOW``), not what a model of that name could take."""
    priced: bool = True
    """EDSL's price table prices its calls; otherwise a call's cost is unknown (None)."""
    stop_sequences: bool = False
    """A reply is stopped where it opens another member's turn (``\\nBob:``). Hosted OpenAI
    reasoning models refuse ``stop``, so only servers get them."""
    sends_max_tokens: bool = False
    """The output limit is also sent as ``max_tokens``: EDSL sends ``max_completion_tokens``
    only, which llama.cpp's server ignores (a reply then runs until the context is full)."""
    keeps_abandoned_calls: bool = False
    """A request abandoned on timeout keeps the server working (it answers one at a time), so a
    retry waits at least as long as the timeout instead of queueing behind it."""
    in_process: bool = False
    """It answers in this process and costs nothing: no in-flight limit, a fixed window, every
    call free."""


HOSTED = Family()
OPENAI = Family(chat_completions=True)
OWN_SERVER = Family(
    chat_completions=True,
    at_a_url=True,
    key_optional=True,
    window_reported=True,
    priced=False,
    stop_sequences=True,
    sends_max_tokens=True,
    keeps_abandoned_calls=True,
)
IN_PROCESS = Family(priced=False, in_process=True)

#: The family of each EDSL service that is not ``HOSTED`` ("offline" is a spec's name for the
#: offline model; EDSL serves it, and its own test model, as "test").
FAMILIES: Mapping[str, Family] = MappingProxyType(
    {
        "openai": OPENAI,
        "openai_compatible": OWN_SERVER,
        "ollama": OWN_SERVER,
        "test": IN_PROCESS,
        "offline": IN_PROCESS,
    }
)


def family_of(service_or_model: Any) -> Family:
    """The family of an EDSL service name, or of a model's service (``HOSTED`` when unknown)."""
    service = (
        service_or_model
        if isinstance(service_or_model, str)
        else getattr(service_or_model, "_inference_service_", None)
    )
    return FAMILIES.get(service, HOSTED) if isinstance(service, str) else HOSTED


def services_where(fact: str) -> frozenset[str]:
    """The services of the table whose family has ``fact`` (a field of ``Family``): for a
    message that lists them (``base_url is for ['ollama', 'openai_compatible']``)."""
    return frozenset(service for service, family in FAMILIES.items() if getattr(family, fact))


__all__ = [
    "FAMILIES",
    "Family",
    "HOSTED",
    "IN_PROCESS",
    "OPENAI",
    "OWN_SERVER",
    "family_of",
    "services_where",
]
