"""The README's Python examples run as written (offline), so a newcomer can follow it literally."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # blocks may create files such as rooms.db
    code = compile(BLOCKS[index], f"README.md block {index}", "exec")
    exec(code, {"__name__": f"readme_block_{index}"})  # noqa: S102 - our own documentation
    assert os.getcwd() == str(tmp_path)
