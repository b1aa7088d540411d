"""The server's warm-up imports what the screens import (a name that no longer exists would be
skipped silently there, and the first visitor would pay for it again)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from ui.bootstrap import WARM_UP_MODULES

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "edsl", "storage.frames", "ui.results", "ui.live")


def test_every_warm_up_module_exists() -> None:
    for name in WARM_UP_MODULES:
        importlib.import_module(name)


def test_the_warm_up_loads_the_screens_heaviest_imports() -> None:
    # In a fresh process: nothing heavy before, everything after.
    script = (
        "import sys; import ui.bootstrap as b;"
        f"heavy = {HEAVY!r};"
        "print(any(m in sys.modules for m in heavy));"
        "b._first_page_drawn.set();"  # as after a first visit: the warm-up does not wait
        "b._warm_up_pages();"
        "print(all(m in sys.modules for m in heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.stdout.split() == ["False", "True"], result.stdout + result.stderr
