"""Waiting for something another thread or process does: a deadline that polls.

A test waits for a condition, never for a time: ``wait_until`` returns as soon as ``check()`` is
true and fails (saying what it waited for) only when the deadline passes first. The deadline is
generous on purpose (a loaded machine makes things slow, not wrong), and it bounds only the wait:
how long the wait took is never asserted.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(
    check: Callable[[], object], timeout: float, what: str = "the condition", interval: float = 0.02
) -> None:
    """Poll ``check()`` every ``interval`` seconds until it is true; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(interval)
