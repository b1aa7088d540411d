"""Hermetic test set-up: a temporary HOME (EDSL writes under the user's data directory), no
provider keys, no remote inference, and a temporary database per test.

The environment is fixed at import time, before any test module imports edsl, because EDSL reads
its configuration and its ``.env`` file when first imported.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

_SESSION_HOME = Path(tempfile.mkdtemp(prefix="rooms-test-home-"))
for _name in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
    _value = _SESSION_HOME if _name == "HOME" else _SESSION_HOME / _name.lower()
    Path(_value).mkdir(parents=True, exist_ok=True)
    os.environ[_name] = str(_value)

PROVIDER_KEYS = (
    "EXPECTED_PARROT_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "DEEP_INFRA_API_KEY",
    "TOGETHER_API_KEY",
    "XAI_API_KEY",
    "OPENAI_COMPATIBLE_API_KEY",
    "OPENAI_COMPATIBLE_BASE_URL",
)


def _drop_provider_keys() -> None:
    for key in PROVIDER_KEYS:
        os.environ.pop(key, None)


_drop_provider_keys()
# EDSL downloads a price list from Expected Parrot on the first priced call of a real model.
os.environ["EDSL_FETCH_TOKEN_PRICES"] = "False"
os.environ["ROOMS_DATA_DIR"] = str(_SESSION_HOME / "rooms-data")
os.environ.pop("ROOMS_DATABASE_URL", None)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test: no provider keys (EDSL may have loaded a .env), its own data folder."""
    for key in PROVIDER_KEYS:
        monkeypatch.delenv(key, raising=False)
    data = tmp_path / "rooms-data"
    data.mkdir()
    monkeypatch.setenv("ROOMS_DATA_DIR", str(data))
    monkeypatch.delenv("ROOMS_DATABASE_URL", raising=False)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh SQLite file for the test (a real file: threads and processes see the same data)."""
    return f"sqlite:///{tmp_path / 'rooms.db'}"
