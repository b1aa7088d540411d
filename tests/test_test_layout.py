"""How the suite itself is laid out: test modules share their helpers through helper modules
(``tests/support/``, ``tests/app/*_support.py``), never by importing another ``test_*.py``.

A test module imported by another runs its module-level set-up twice under two names, ties the
two files' fixtures and helpers together, and hides what the helper is for; nineteen modules once
imported ``tests/app/test_pages.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _is_test_module(name: str) -> bool:
    """A dotted name that is one of the suite's ``test_*.py`` files."""
    path = ROOT.joinpath(*name.split(".")).with_suffix(".py")
    return path.name.startswith("test_") and path.is_file()


def imported_test_modules(source: str, package: str) -> set[str]:
    """The suite's ``test_*`` modules a file's source imports (relative imports resolved against
    ``package``; ``from tests.app import test_pages`` names the module too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if _is_test_module(a.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            if _is_test_module(module):
                found.add(module)
            found.update(
                f"{module}.{a.name}" for a in node.names if _is_test_module(f"{module}.{a.name}")
            )
    return found


def _package(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).parent.parts)


def test_no_test_module_imports_another_test_module() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(found)
        for path in sorted(TESTS.rglob("*.py"))
        if (found := imported_test_modules(path.read_text(encoding="utf-8"), _package(path)))
    }
    assert offenders == {}, "move what they share to a helper module (tests/support/...)"


def test_the_layout_check_can_fail() -> None:
    """A negative control: every way of importing a test module is seen, a helper module is not."""
    source = (
        "from tests.app.test_pages import x\n"
        "from tests.app import test_sign_in, page_support\n"
        "import tests.storage.test_streamed_exports\n"
        "def f():\n    from .test_budgets import y\n"
        "from tests.support.room_common import speaker_of\n"
    )
    assert imported_test_modules(source, "tests.app") == {
        "tests.app.test_pages",
        "tests.app.test_sign_in",
        "tests.storage.test_streamed_exports",
        "tests.app.test_budgets",
    }
