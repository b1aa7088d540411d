"""Every ```python block of README.md and docs/*.md runs as written, offline, so a reader can follow
the documentation literally.

Each block runs on its own (a fresh namespace) in a temporary working folder, with the suite's
hermetic set-up (``tests/conftest.py``: a temporary HOME and data folder, no provider keys, so the
offline model answers). A block that must not run is preceded by a marker line with its reason,
``<!-- not run: needs a running llama.cpp server -->``; use it sparingly.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\S*)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not run:(.*?)-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced Python block: where it is, its code, and why it is not run (None: it runs)."""

    page: str
    line: int
    code: str
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def python_blocks(text: str, page: str) -> list[Block]:
    """The ```python blocks of a Markdown text, each with the ``not run`` reason before it."""
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        start = index
        index += 1
        while index < len(lines) and not _FENCE.match(lines[index]):
            index += 1
        if index >= len(lines):
            raise ValueError(f"{page}:{start + 1}: a code fence is never closed")
        if fence.group(1) == "python":
            before = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
            marker = _NOT_RUN.match(before.strip())
            reason = marker.group(1).strip() if marker else None
            if marker and not reason:
                raise ValueError(f"{page}:{start + 1}: a 'not run' marker must say why")
            code = "\n".join(lines[start + 1 : index]) + "\n"
            blocks.append(Block(page, start + 1, code, reason))
        index += 1
    return blocks


def run_block(block: Block) -> None:
    """Execute one block in a fresh namespace (the caller sets the working folder)."""
    code = compile(block.code, block.id, "exec")
    exec(code, {"__name__": f"doc_block_{block.line}"})  # noqa: S102 - our own documentation


BLOCKS = [
    block
    for page in PAGES
    for block in python_blocks(page.read_text(encoding="utf-8"), str(page.relative_to(ROOT)))
]


def test_the_documentation_has_python_examples() -> None:
    runnable = [b for b in BLOCKS if b.not_run is None]
    assert len(runnable) >= 12, [b.id for b in BLOCKS]
    marked = [b for b in BLOCKS if b.not_run]
    assert len(marked) <= max(2, len(BLOCKS) // 10), f"'not run' is for exceptions: {marked}"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_doc_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if block.not_run:
        pytest.skip(f"marked not run: {block.not_run}")
    monkeypatch.chdir(tmp_path)  # blocks may create files such as rooms.db
    environment = dict(os.environ)
    try:
        run_block(block)
    finally:  # a block that sets a variable must not change the next one's world
        os.environ.clear()
        os.environ.update(environment)
    assert os.getcwd() == str(tmp_path)


# -- negative controls: the runner can fail ---------------------------------------------------------

BROKEN = """Intro.

```python
from conversation import Room
assert Room.create is None, "a broken example"
```

<!-- not run: needs a real server -->
```python
raise SystemExit("never executed")
```

```bash
echo "not python: ignored"
```
"""


def test_a_broken_block_fails_and_a_marked_one_is_left_out() -> None:
    first, second = python_blocks(BROKEN, "broken.md")
    assert (first.line, first.not_run) == (3, None)
    assert (second.line, second.not_run) == (9, "needs a real server")
    with pytest.raises(AssertionError, match="a broken example"):
        run_block(first)


def test_a_marker_without_a_reason_and_an_open_fence_are_refused() -> None:
    with pytest.raises(ValueError, match="must say why"):
        python_blocks("<!-- not run: -->\n```python\npass\n```\n", "x.md")
    with pytest.raises(ValueError, match="never closed"):
        python_blocks("```python\npass\n", "x.md")
