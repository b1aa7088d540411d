"""Everything type-checks (mypy, configured in pyproject.toml): the vocabulary, the settings,
the engine, storage, and the app: its ui helpers, pages and entry points."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_is_clean(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "vocabulary",
            "settings",
            "conversation",
            "storage",
            "ui",
            "pages",
            "app.py",
            "streamlit_app.py",
            "--cache-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
