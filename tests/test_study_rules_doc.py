"""docs/study-rules.md names, for each study rule, the test that shows it: every test it names
exists (a renamed or deleted test is caught here, not by a reader)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_the_study_rules_page_names_exists() -> None:
    text = (ROOT / "docs" / "study-rules.md").read_text(encoding="utf-8")
    named, missing, last = 0, [], ""
    # `file.py::test_name`, or `::test_name` for another test of the file named before it.
    for match in re.finditer(r"`([\w/]*\.py)?::(test_\w+)`", text):
        last = match.group(1) or last
        path = ROOT / (last if last.startswith("tests/") else f"tests/{last}")
        named += 1
        if f"def {match.group(2)}(" not in path.read_text(encoding="utf-8"):
            missing.append(f"{last}::{match.group(2)}")
    assert named >= 30 and missing == []
