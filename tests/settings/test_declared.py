"""The docs' settings tables against the one declaration (``settings.Settings``): every variable
is documented with its default, and no documented variable is missing from the class."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from settings import Settings, env_name

ROOT = Path(__file__).resolve().parents[2]
#: A setting's variable written in a table cell (a ``*`` is a family: ``ROOMS_MAX_*``).
VARIABLE = re.compile(r"`((?:ROOMS|CONVERSATION)_[A-Z_]*[A-Z*])`")
NUMBER = re.compile(r"\d[\d,_]*(?:\.\d+)?")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def documented(text: str) -> dict[str, str]:
    """``{variable: its default cell}`` of every table in ``text`` with a "setting" and a
    "default" column; a cell naming several variables gives each its part of ``a / b``."""
    found: dict[str, str] = {}
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if not line.startswith("|") or number + 1 >= len(lines):
            continue
        if not re.match(r"^\|[\s|:-]+\|$", lines[number + 1].strip()):
            continue  # not a header (the line after a header is |---|---|)
        header = [cell.lower() for cell in _cells(line)]
        names = [i for i, cell in enumerate(header) if "setting" in cell]
        defaults = [i for i, cell in enumerate(header) if "default" in cell]
        if not names or not defaults:
            continue
        for row in lines[number + 2 :]:
            if not row.startswith("|"):
                break
            cells = _cells(row)
            variables = VARIABLE.findall(cells[names[0]])
            parts = [part.strip() for part in cells[defaults[0]].split(" / ")]
            for index, variable in enumerate(variables):
                found[variable] = parts[index] if len(parts) == len(variables) else parts[0]
    return found


def all_documented() -> dict[str, str]:
    found: dict[str, str] = {}
    for page in sorted((ROOT / "docs").glob("*.md")):
        found.update(documented(page.read_text(encoding="utf-8")))
    return found


def shows(cell: str, default: Any) -> bool:
    """Whether a table's default cell says ``default``: its first number (``20,000``, ``0.75``,
    ``1`` for a true switch); for a setting unset by default, any words (what applies then)."""
    if default is None:
        return bool(cell) and cell not in ("-", "")
    expected = float(int(default)) if isinstance(default, bool) else float(default)
    numbers = NUMBER.findall(cell)
    return bool(numbers) and float(numbers[0].replace(",", "").replace("_", "")) == expected


DECLARED = {env_name(name): field.default for name, field in Settings.model_fields.items()}


@pytest.mark.parametrize("variable", sorted(DECLARED))
def test_every_setting_is_documented_with_its_default(variable: str) -> None:
    documented_here = all_documented()
    assert variable in documented_here, f"add {variable} to a settings table in docs/"
    cell = documented_here[variable]
    assert shows(cell, DECLARED[variable]), f"{variable}: docs say {cell!r}, the class says " + (
        f"{DECLARED[variable]!r}"
    )


def test_every_documented_setting_is_declared() -> None:
    names = {name for name in all_documented() if not name.endswith("*")}
    assert names, "no settings table found"
    assert names - set(DECLARED) == set()


def test_a_family_row_names_declared_settings() -> None:
    """``ROOMS_MAX_*`` and ``ROOMS_PARTICIPANT_*`` point to a table of their own: each family
    has members, and every member is documented (above)."""
    families = {name[:-1] for name in all_documented() if name.endswith("*")}
    assert families >= {"ROOMS_MAX_", "ROOMS_PARTICIPANT_"}
    for family in families:
        assert [name for name in DECLARED if name.startswith(family)], family


def test_the_table_reader_can_fail() -> None:
    """Negative controls: a wrong default, a missing column, a two-variable cell."""
    table = (
        "| Setting | What | Default |\n|---|---|---|\n"
        "| `ROOMS_A`, `ROOMS_B` | x | 0.75 / 2 |\n| `ROOMS_C` | y | 20,000 characters |\n"
    )
    assert documented(table) == {"ROOMS_A": "0.75", "ROOMS_B": "2", "ROOMS_C": "20,000 characters"}
    assert documented("| Setting | What |\n|---|---|\n| `ROOMS_A` | x |\n") == {}
    assert shows("20,000 characters", 20_000) and not shows("2,000 characters", 20_000)
    assert shows("`1`", True) and not shows("`1`", False) and shows("0.75", 0.75)
    assert shows("the platform's folder", None) and not shows("-", None)
