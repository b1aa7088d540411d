"""A real small LLM for the ``llm`` tests: SmolLM2-135M-Instruct on llama.cpp's OpenAI-compatible
server, started once per session on 127.0.0.1 (``tests/support/llm_server.py``).

Every module here sets ``pytestmark = pytest.mark.llm`` (``python -m pytest -m llm``). Without the
server package or the model file the tests are skipped with the remedy (``.ci/install-llm``),
except when ``CI`` is set: there a missing model is a failure, so CI cannot pass by skipping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.llm_server import LlamaServer, find_gguf, missing_reason


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    reason = missing_reason()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set, so the llm tests must run)", pytrace=False)
        pytest.skip(reason)
    gguf = find_gguf()
    assert gguf is not None
    with LlamaServer.start(Path(gguf), log_dir=tmp_path_factory.mktemp("llama")) as server:
        yield server


@pytest.fixture
def smollm2(llm_server: LlamaServer) -> dict:
    """The model spec of the running server (what a room stores)."""
    return {"service": "openai_compatible", "model": "smollm2", "base_url": llm_server.base_url}
