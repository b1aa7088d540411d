"""The README is a front door: short, the two commands exactly as CI runs them, and an index that
reaches every page of docs/. (Its Python examples run in ``tests/test_docs.py``.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
APP_COMMAND = "python -m pip install -r requirements.txt && streamlit run app.py"
TEST_COMMAND = "python -m pip install -r requirements-dev.txt && python -m pytest"
_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def test_the_readme_stays_a_front_door() -> None:
    assert len(README) <= 10_000, f"README.md has {len(README)} characters; move detail to docs/"


def test_the_two_commands_are_in_the_readme_word_for_word() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL)
    commands = {line.strip() for block in blocks for line in block.splitlines()}
    assert APP_COMMAND in commands
    assert TEST_COMMAND in commands


def test_ci_runs_the_readme_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [ln for ln in script.splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines[-1].replace(" -q", "") == TEST_COMMAND


def test_every_docs_page_is_in_the_readme_index_and_every_link_resolves() -> None:
    linked = {m.group(1) for m in _LINK.finditer(README) if "://" not in m.group(1)}
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, f"not in the README's index: {sorted(pages - linked)}"
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        text = page.read_text(encoding="utf-8")
        for match in _LINK.finditer(text):
            target = match.group(1)
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


def test_every_anchor_into_a_docs_page_exists() -> None:
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for match in _LINK.finditer(page.read_text(encoding="utf-8")):
            target, anchor = match.group(1), match.group(2)
            if not anchor or "://" in target or not target.endswith(".md"):
                continue
            headings = (page.parent / target).read_text(encoding="utf-8")
            assert anchor[1:] in _anchors(headings), f"{page.name}: no {anchor} in {target}"


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors (lower case, punctuation dropped, spaces to dashes), plus any
    explicit ``<a id="...">``."""
    found = set(re.findall(r'<a id="([^"]+)"', markdown))
    for heading in re.findall(r"^#{1,6} (.+)$", markdown, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found
