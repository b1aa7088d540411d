"""The trust boundary's tables: every refused input raises a typed error naming its field, in
well under a second, and leaves every table of the database as it was.

``refused`` is the one assertion every table uses; ``seeded_db`` is a database that is not empty
(a room with a message and an agent turn), so "unchanged" means something.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel
from conversation.rooms.room import Room
from storage import Database
from tests.support.db_state import snapshot

#: Seconds a refusal may take at most (a 50 MB value included): well under a second.
REFUSAL_SECONDS = 0.5
#: One 50 MB value, shared by every table (built once, outside any timed call).
BIG = "x" * 50_000_000
AGENTS = [{"name": "Alice"}, {"name": "Bob"}]


def nested(depth: int, leaf: Any = "leaf") -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.fixture
def seeded_db(db: Database) -> Database:
    room = Room.create(db, name="existing", agents=AGENTS, model=OfflineModel())
    room.post("hello", request_id="seed-1")
    room.step()
    return db


@pytest.fixture
def refused(seeded_db: Database) -> Callable[..., ConversationValueError]:
    """``refused(call, *words, error=ConversationValueError)``: ``call()`` raises ``error``
    whose message contains every word (the field, the fix), within ``REFUSAL_SECONDS``, and
    changes no row of any table. Returns the error."""

    def check(
        call: Callable[[], Any],
        *words: str,
        error: type[ConversationValueError] = ConversationValueError,
        seconds: float = REFUSAL_SECONDS,
    ) -> ConversationValueError:
        before = snapshot(seeded_db)
        # Once untimed: the first refusal of a kind may import or build what every later one
        # reuses (a schema, a module), which is not the refusal's own cost.
        with pytest.raises(error):
            call()
        cpu = time.thread_time()
        with pytest.raises(error) as caught:
            call()
        # The bound is on the computing the refusal costs (this thread's CPU time), so other
        # processes on a loaded machine cannot fail it; a refusal that waits instead of
        # computing is caught by the suite's pytest-timeout, never by a wall-clock assert.
        spent = time.thread_time() - cpu
        message = str(caught.value)
        for word in words:
            assert word in message, f"{word!r} not named in: {message[:300]}"
        assert spent < seconds, f"refused after {spent:.3f} s of CPU: {message[:200]}"
        assert snapshot(seeded_db) == before, "a refused input changed the database"
        return caught.value

    return check
