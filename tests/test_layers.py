"""The layers of DESIGN.md section 2, enforced: imports flow ``app/pages -> ui -> conversation ->
storage``; the pure core imports no edsl, database or UI code; only ``conversation/models`` (and
the analysis module built on it) reach EDSL's model machinery; only ``storage`` speaks SQL; no
message is ever rendered as HTML.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONVERSATION = ROOT / "conversation"

#: Plain functions and frozen dataclasses over events: no edsl, no database, no UI, no clock.
PURE_CORE = [
    "exceptions",
    "safety",
    "transcript",
    "retries",
    "mentions",
    "room_events",
    "room_planner",
    "rooms",
    "policies",
    "policy_base",
    "coordinator",
    "transitions",
    "strategies",
    "next_speaker_utilities",
    "agent_names",
    "termination",
    "termination_base",
    "dialogue_conditions",
    "room_state",
    "context",
    "room_log",
    "prompts",
]
MODEL_MACHINERY = ("edsl.language_models", "edsl.inference_services", "edsl.caching")


def imported(path: Path, package: str | None = None) -> set[str]:
    """Absolute module names a file imports (relative imports resolved within its package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if package is None:
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
    return names


def top(name: str) -> str:
    return name.split(".")[0]


def python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("module", PURE_CORE)
def test_pure_core_imports_nothing_heavy(module: str) -> None:
    forbidden = {"edsl", "sqlmodel", "sqlalchemy", "storage", "streamlit", "pandas", "ui"}
    names = imported(CONVERSATION / f"{module}.py")
    assert not {n for n in names if top(n) in forbidden}
    # no clock and no global random in the core: randomness comes from seeded Random objects
    source = (CONVERSATION / f"{module}.py").read_text(encoding="utf-8")
    assert "random.choice(" not in source and "random.random(" not in source
    assert "time.time(" not in source and "datetime.now(" not in source


def test_nothing_below_the_ui_imports_streamlit() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("conversation", "storage", "examples", "benchmarks")
        for path in python_files(folder)
        if any(top(n) == "streamlit" for n in imported(path))
    ]
    assert offenders == []


def test_only_the_models_layer_reaches_edsl_model_machinery() -> None:
    offenders = []
    for path in python_files("conversation"):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("conversation/models/") or relative == "conversation/analysis.py":
            continue
        if any(n.startswith(MODEL_MACHINERY) for n in imported(path)):
            offenders.append(relative)
    assert offenders == []


def test_only_storage_speaks_sql() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("conversation", "pages", "ui")
        for path in python_files(folder)
        if any(top(n) in {"sqlmodel", "sqlalchemy", "sqlite3", "alembic"} for n in imported(path))
    ]
    assert offenders == []


def test_conversation_never_imports_the_ui() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in python_files("conversation")
        if any(top(n) in {"ui", "pages", "app"} for n in imported(path))
    ]
    assert offenders == []


def test_no_html_rendering_anywhere() -> None:
    offenders = []
    for folder in (".",):
        for path in sorted((ROOT / folder).glob("**/*.py")):
            if "tests" in path.parts or ".git" in path.parts:
                continue
            text = path.read_text(encoding="utf-8")
            if "unsafe_allow_html" in text or "unsafe_allow_javascript" in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_the_layer_check_itself_can_fail(tmp_path: Path) -> None:
    """A negative control: a file importing streamlit is caught by ``imported``."""
    probe = tmp_path / "probe.py"
    probe.write_text("import streamlit as st\nfrom .models import ask\n", encoding="utf-8")
    names = imported(probe, package="conversation")
    assert "streamlit" in names and "conversation.models" in names
