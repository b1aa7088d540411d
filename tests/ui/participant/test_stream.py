"""The page's event stream and the process's watcher (``ui.participant.hub``): the whole view
when the stream opens, then what changes is pushed (a partner's message, a stage change, the
researcher's message), woken by this process's own writes at once and by a poll otherwise; a
person's view is read again only when their marker moved; presence is one write for everyone
with an open stream."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import storage
from conversation import study
from conversation.study.participant.identity import token_hash
from storage import Database
from tests.ui.participant.conftest import Site, seated, serving, small_study


def test_the_stream_opens_with_the_view_then_pushes_a_partners_message(site: Site) -> None:
    code = small_study(site.db)
    ana, bo = seated(site, code)
    listener = site.listen(bo)
    try:
        first = listener.wait(lambda name, data: name == "view")
        assert first["stage"] == "room" and first["seat"] and "room_id" not in first
        listener.wait(lambda name, data: name == "message" and data["speaker"] == "Host")
        site.act("post", ana, text="are you there?", request_id="q")
        pushed = listener.wait(lambda n, d: n == "message" and d["content"] == "are you there?")
        assert not pushed["own"] and pushed["speaker"] == site.view(ana)["seat"]
        # Each message is sent once to a stream.
        time.sleep(0.5)
        assert listener.messages().count("are you there?") == 1
    finally:
        listener.stop()


def test_a_stage_change_and_the_researchers_message_are_pushed(site: Site) -> None:
    code = small_study(site.db)
    ana, _ = seated(site, code)
    listener = site.listen(ana)
    try:
        listener.wait(lambda name, data: name == "view" and data["stage"] == "room")
        person = storage.participant_by_token(site.db, token_hash(ana))
        study.message_participant(site.db, code, int(person.id), "Please say hello.")
        said = listener.wait(lambda n, d: n == "view" and d["help"])
        assert said["help"][0]["text"] == "Please say hello." and said["help"][0]["from_researcher"]
        later = datetime.now(UTC) + timedelta(seconds=601)
        study.tick(site.db, code, now=later)  # the room's time limit has passed
        moved = listener.wait(lambda n, d: n == "view" and d["stage"] == "post_survey")
        assert moved["questions"]
    finally:
        listener.stop()


def test_a_view_is_read_again_only_when_its_marker_moved(db: Database) -> None:
    """A post in one room reads again the views of that room's people, not of another room's
    (their marker did not move); with nothing written, a cycle reads no view at all."""
    import asyncio

    with serving(db, poll_seconds=3600, presence_seconds=3600) as site:
        code = small_study(db, participants={"cap": 4, "heartbeat_seconds": 1})
        ana, bo = seated(site, code)
        cy, di = seated_second_group(site, code)
        listeners = [site.listen(t) for t in (ana, bo, cy, di)]
        try:
            for listener in listeners:
                listener.wait(lambda name, data: name == "view" and data["stage"] == "room")
            hub = site.site.hub

            def cycle() -> int:
                loop = hub._loop  # noqa: SLF001 - run one cycle on the hub's own loop
                assert loop is not None
                return asyncio.run_coroutine_threadsafe(hub.cycle(), loop).result(10)

            time.sleep(0.3)
            cycle()
            assert cycle() == 0  # nothing changed: no view read
            db2 = Database(db.url)  # another process's write: no hook of this one sees it
            try:
                study.post_as_participant(db2, cy, "in the second room", request_id="c")
            finally:
                db2.dispose()
            assert cycle() == 2  # cy and di: their room's marker moved; ana and bo: not
            listeners[3].wait(lambda n, d: n == "message" and d["content"] == "in the second room")
            assert "in the second room" not in listeners[0].messages()
        finally:
            for listener in listeners:
                listener.stop()


def seated_second_group(site: Site, code: str) -> list[str]:
    tokens = []
    for n in (5, 6):
        token = site.join(code, PROLIFIC_PID=f"pid-{n}")
        site.act("consent", token, agree=True)
        site.act("survey", token, answers={"bargained_before": "yes"})
        tokens.append(token)
    study.tick(site.db, code)
    return tokens


def test_this_processs_writes_wake_the_watcher_and_another_processs_wait_for_the_poll(
    db: Database,
) -> None:
    """With a poll of an hour, a post made through this process reaches the partner's stream at
    once (its commit wakes the watcher); the same post made by another process (another
    ``Database``: SQLite has no notices) is seen only when the watcher is woken."""
    with serving(db, poll_seconds=3600, presence_seconds=3600) as site:
        code = small_study(db)
        ana, bo = seated(site, code)
        listener = site.listen(bo)
        try:
            listener.wait(lambda name, data: name == "view")
            site.act("post", ana, text="through this process", request_id="a")
            listener.wait(lambda n, d: n == "message" and d["content"] == "through this process", 5)
            other = Database(db.url)
            try:
                study.post_as_participant(other, ana, "from another process", request_id="b")
            finally:
                other.dispose()
            time.sleep(1.0)
            assert "from another process" not in listener.messages()
            site.site.hub.wake_threadsafe()  # what the poll (or a NOTIFY) does
            listener.wait(lambda n, d: n == "message" and d["content"] == "from another process")
        finally:
            listener.stop()


def test_presence_is_one_write_for_every_open_stream(site: Site) -> None:
    code = small_study(site.db)
    ana, bo = seated(site, code)
    study_id = study.get_study(site.db, code).id

    def moments() -> dict[str, datetime]:
        return {p.pseudonym: p.last_seen_at for p in storage.list_participants(site.db, study_id)}

    start = moments()
    listener = site.listen(ana)
    try:
        listener.wait(lambda name, data: name == "view")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            now = moments()
            moved = {p for p in now if now[p] > start[p]}
            if moved:
                break
            time.sleep(0.1)
        assert len(moved) == 1  # ana's stream is open; bo has none
        assert study.note_present(site.db, [ana, bo, "not-a-token"]) == 2
        assert bo
    finally:
        listener.stop()
