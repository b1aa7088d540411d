"""storage is the bottom layer: it imports nothing from conversation, streamlit or edsl."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import storage

STORAGE = Path(storage.__file__).parent
FORBIDDEN = ("conversation", "streamlit", "edsl", "pages", "app")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_storage_imports_no_upper_layer() -> None:
    offenders = {
        f"{path.relative_to(STORAGE)}: {name}"
        for path in STORAGE.rglob("*.py")
        for name in _imported_modules(path)
        if name.split(".")[0] in FORBIDDEN
    }
    assert offenders == set()


def test_importing_storage_loads_no_upper_layer_nor_pandas() -> None:
    code = (
        "import sys, storage; "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        f"{FORBIDDEN!r} + ('pandas',)]; print(bad)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=STORAGE.parent,
    )
    assert result.stdout.strip() == "[]"


def test_public_api_is_listed() -> None:
    for name in storage.__all__:
        assert hasattr(storage, name), name
        if name[0].islower():  # every function of the face (constants are upper case)
            assert callable(getattr(storage, name)), name


def test_one_namespace() -> None:
    """``storage.X`` only: a curated face with no star import, and no second name for it."""
    tree = ast.parse((STORAGE / "__init__.py").read_text(encoding="utf-8"))
    stars = [n for n in ast.walk(tree) if isinstance(n, ast.alias) and n.name == "*"]
    assert stars == []
    assert not (STORAGE / "repository.py").exists()
