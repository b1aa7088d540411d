"""storage is the bottom layer: it imports nothing from conversation, streamlit or edsl. Inside it,
sub-packages by concept import only those below them, each behind a curated face."""

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


#: The sub-packages of storage and the ones each may import (besides itself and the shared
#: top-level modules: errors, checks, secret_guard, coltypes). Imports flow one way.
SUB_PACKAGES: dict[str, set[str]] = {
    "database": set(),
    "tables": set(),
    "rooms": {"database", "tables"},
    "experiments": {"database", "tables", "rooms"},
    "research": {"database", "tables", "rooms", "experiments"},
    "models": {"database", "tables", "rooms"},
    "studies": {"database", "tables", "rooms", "experiments", "models"},
}
SHARED = {"errors", "checks", "secret_guard", "coltypes"}


def _concept(path: Path) -> str:
    return path.relative_to(STORAGE).with_suffix("").parts[0]


def _storage_imports(path: Path) -> set[str]:
    """The storage concepts a module imports: ``storage.X...`` -> ``X`` (``storage`` alone: the
    top face, ``""``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    concepts: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] == "storage":
                if len(parts) > 1:
                    concepts.add(parts[1])
                else:  # from storage import tables / from storage import X
                    concepts.update(
                        alias.name if alias.name in SUB_PACKAGES else "" for alias in node.names
                    )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "storage":
                    concepts.add(parts[1] if len(parts) > 1 else "")
    return concepts


def _layer_offenders(root: Path) -> dict[str, list[str]]:
    offenders: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if "migrations" in rel.parts or rel.parts == ("__init__.py",):
            continue
        concept = _concept(path) if root == STORAGE else rel.parts[0].removesuffix(".py")
        if concept in SHARED:
            allowed = SHARED
        elif concept in SUB_PACKAGES:
            allowed = SUB_PACKAGES[concept] | SHARED | {concept}
        else:
            offenders[str(rel)] = ["a module of no concept: add it to a sub-package"]
            continue
        bad = sorted(c or "storage (the top face)" for c in _storage_imports(path) - allowed)
        if bad:
            offenders[str(rel)] = bad
    return offenders


def test_storage_sub_packages_import_only_those_below_them() -> None:
    """database and tables at the bottom, then rooms, experiments, research; models and studies
    beside them. No module inside storage imports the top face (it imports them all)."""
    assert _layer_offenders(STORAGE) == {}


def test_the_storage_layer_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "rooms").mkdir()
    (tmp_path / "rooms" / "room.py").write_text("from storage.research import answers\n")
    (tmp_path / "stray.py").write_text("import storage\n")
    offenders = _layer_offenders(tmp_path)
    assert offenders == {
        "rooms/room.py": ["research"],
        "stray.py": ["a module of no concept: add it to a sub-package"],
    }


def _faces() -> list[Path]:
    return sorted(p for p in STORAGE.glob("*/__init__.py") if p.parent.name != "migrations")


def test_every_sub_package_has_a_curated_face() -> None:
    """Each sub-package's face imports from its own modules (no star), exports one literal
    ``__all__`` of what it imports, and shadows none of its modules."""
    assert {p.parent.name for p in _faces()} >= {"database", "tables", "rooms", "experiments"}
    for face in _faces():
        tree = ast.parse(face.read_text(encoding="utf-8"))
        imported = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module
            for alias in node.names
        }
        assert "*" not in imported, face
        exported = [
            ast.literal_eval(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        ]
        assert len(exported) == 1, face
        names = exported[0]
        assert len(names) == len(set(names)), face
        assert set(names) <= imported, (face, set(names) - imported)
        modules = {p.stem for p in face.parent.glob("*.py")}
        assert not set(names) & modules, (face, set(names) & modules)
