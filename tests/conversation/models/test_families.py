"""The provider families: one row per family of services, read everywhere a service's
capability is asked (no set of service names elsewhere)."""

from __future__ import annotations

import ast
from pathlib import Path

from conversation.models import OfflineModel, resolve_model
from conversation.models.providers.families import (
    FAMILIES,
    HOSTED,
    IN_PROCESS,
    OPENAI,
    OWN_SERVER,
    family_of,
    services_where,
)

ROOT = Path(__file__).resolve().parents[3]


def test_each_service_has_its_family() -> None:
    assert family_of("openai") is OPENAI
    assert family_of("openai_compatible") is family_of("ollama") is OWN_SERVER
    assert family_of("anthropic") is family_of("no such service") is HOSTED
    assert family_of(OfflineModel()) is IN_PROCESS and family_of(None) is HOSTED
    server = resolve_model(
        {"service": "openai_compatible", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    )
    assert family_of(server) is OWN_SERVER


def test_the_facts_the_sets_used_to_spell() -> None:
    servers = {"openai_compatible", "ollama"}
    assert services_where("at_a_url") == services_where("stop_sequences") == servers
    assert services_where("window_reported") == services_where("sends_max_tokens") == servers
    assert services_where("chat_completions") == {"openai", *servers}
    assert services_where("in_process") == {"test", "offline"}
    assert not HOSTED.chat_completions and HOSTED.priced and not OWN_SERVER.priced


def _service_name_sets(source: str) -> list[int]:
    """Lines of ``source`` that build a set, tuple or list of two or more known services."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Set | ast.Tuple | ast.List):
            names = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len([n for n in names if n in FAMILIES]) >= 2:
                lines.append(node.lineno)
    return lines


def test_no_other_module_spells_a_set_of_services() -> None:
    found = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "conversation").rglob("*.py"))
        if (lines := _service_name_sets(path.read_text(encoding="utf-8")))
    }
    # rooms/prompt.py: the offline models read their prompt as one string (the rooms' own rule)
    assert set(found) <= {"conversation/rooms/prompt.py"}, found
    # the check can fail: a set as the modules used to write them is seen
    assert _service_name_sets('X = frozenset({"openai_compatible", "ollama"})') == [1]
