"""``pyproject.toml`` and ``requirements.txt`` declare the same runtime requirements, pinned alike:
``pip install .`` must give a working app (Results needs statsmodels, scipy, krippendorff and
scikit-learn; sign-in needs Authlib), exactly as ``pip install -r requirements.txt`` does. A
package added to one file and not the other fails here, named. The ``test`` extra pins what
``requirements-dev.txt`` pins."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def requirement_lines(text: str) -> list[str]:
    """The requirement lines of a requirements file: no comments, no blank lines, no options
    (``-r other.txt``)."""
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def by_name(requirements: list[str]) -> dict[str, str]:
    """Each requirement by its canonical name (``Authlib`` and ``authlib`` are one package),
    written in one normal form (extras, pin and markers as ``packaging`` reads them)."""
    parsed = [Requirement(r) for r in requirements]
    names = [canonicalize_name(r.name) for r in parsed]
    assert len(names) == len(set(names)), f"a package is listed twice: {sorted(names)}"
    return {name: str(r).replace(r.name, name, 1) for name, r in zip(names, parsed, strict=True)}


def differences(left: dict[str, str], right: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Every package missing from one side or pinned differently: name -> (left, right)."""
    return {
        name: (left.get(name, "missing"), right.get(name, "missing"))
        for name in sorted(left.keys() | right.keys())
        if left.get(name) != right.get(name)
    }


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_pyproject_declares_every_runtime_requirement_pinned_as_requirements_txt() -> None:
    required = by_name(requirement_lines((ROOT / "requirements.txt").read_text(encoding="utf-8")))
    declared = by_name(_pyproject()["project"]["dependencies"])
    assert differences(required, declared) == {}, (
        "requirements.txt (left) and pyproject.toml's dependencies (right) must list the same "
        "packages with the same pins: add the package to both"
    )


def test_every_runtime_requirement_is_pinned() -> None:
    required = requirement_lines((ROOT / "requirements.txt").read_text(encoding="utf-8"))
    loose = [r for r in required if not str(Requirement(r).specifier).startswith("==")]
    assert loose == []


def test_the_test_extra_pins_what_requirements_dev_pins() -> None:
    dev = by_name(requirement_lines((ROOT / "requirements-dev.txt").read_text(encoding="utf-8")))
    extra = by_name(_pyproject()["project"]["optional-dependencies"]["test"])
    assert {name: (dev.get(name, "missing"), pin) for name, pin in extra.items()} == {
        name: (pin, pin) for name, pin in extra.items()
    }


def test_the_comparison_can_fail() -> None:
    """A negative control: a missing package, a different pin, another spelling of one name."""
    left = by_name(["Authlib==1.9.10", "scipy==1.17.1", "psycopg[binary]==3.3.9"])
    right = by_name(["authlib==1.9.10", "scipy==1.17.0", "psycopg[binary]==3.3.9", "tenacity"])
    assert differences(left, right) == {
        "scipy": ("scipy==1.17.1", "scipy==1.17.0"),
        "tenacity": ("missing", "tenacity"),
    }
    assert requirement_lines("# c\n-r base.txt\nedsl==1.0.9  # the engine\n\n") == ["edsl==1.0.9"]
