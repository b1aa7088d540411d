"""The server's warm-up imports what the screens import (a name that no longer exists would be
skipped silently there, and the first visitor would pay for it again)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ui.bootstrap import WARM_UP_MODULES

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "edsl", "storage.research.frames", "ui.results.tables", "ui.room.live")


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


def test_the_warm_up_never_imports_while_a_page_runs() -> None:
    """Two threads importing the same modules in different orders can be handed a partially
    initialised module (a first deep-linked visit failed so); a page run holds the warm-up's
    lock, so the warm-up's imports wait for it, and go on after it."""
    script = (
        "import sys, threading, time; import ui.bootstrap as b;"
        "b._first_page_drawn.set(); b._warming_up.set(); b.WARM_UP_AFTER_FIRST_PAGE_SECONDS = 0;"
        "b._IMPORTS.acquire();"  # a page is running
        "t = threading.Thread(target=b._warm_up_pages); t.start(); time.sleep(1.5);"
        "print('pandas' in sys.modules, b._warming_up.is_set());"
        "b._IMPORTS.release(); t.join(300);"  # the page is done
        "print('pandas' in sys.modules, b._warming_up.is_set())"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.stdout.split() == ["False", "True", "True", "False"], (
        result.stdout + result.stderr
    )


def test_a_page_run_during_the_warm_up_holds_its_lock(
    db: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    import ui.bootstrap as bootstrap

    seen: list[bool] = []
    real_setup = bootstrap._shared_setup

    def setup() -> None:
        seen.append(bootstrap._IMPORTS.locked())
        real_setup()

    monkeypatch.setattr(bootstrap, "_shared_setup", setup)
    bootstrap._warming_up.set()
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.run()
        assert not at.exception, at.exception
    finally:
        bootstrap._warming_up.clear()
    at.run()  # warmed up: pages run without the lock
    assert seen == [True, False]
    assert not bootstrap._IMPORTS.locked()


def test_the_server_answers_only_once_homes_imports_are_done(tmp_path: Path) -> None:
    """The server's start (what runs before it answers) imports Home's modules; the other
    screens' are left to the background."""
    script = (
        "import sys; import ui.bootstrap as b;"
        "b._start_with_server();"
        "print(all(m in sys.modules for m in b.HOME_WARM_UP_MODULES), b._warming_up.is_set())"
    )
    env = {
        **os.environ,
        "ROOMS_APP_RUNNER": "0",
        "ROOMS_DATABASE_URL": f"sqlite:///{tmp_path / 'rooms.db'}",
        "HOME": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.stdout.split() == ["True", "True"], result.stdout + result.stderr
