"""What a process serving participants' pages reads and writes for all of them at once
(``storage.participant_markers``, ``storage.mark_present``), and the notices that wake it: on
SQLite and PostgreSQL. A marker moves with every change a page shows and only then; presence is
one statement for everyone; on PostgreSQL every such change, from any process, is a notice on
``participant_pages`` (one per transaction), and nothing else is."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import storage
from conversation import study as S
from conversation.study.participant.identity import token_hash
from tests.conversation.study.helpers import launched, seated, to_lobby


def markers(db: storage.Database, *tokens: str) -> dict[str, tuple]:
    found = storage.participant_markers(db, [token_hash(t) for t in tokens])
    return {t: found[token_hash(t)] for t in tokens if token_hash(t) in found}


def test_a_marker_moves_with_what_the_page_shows_and_only_then(db: storage.Database) -> None:
    study = launched(db, experiment={"groups": 2})
    ana, bo = (t.token for t in seated(db, study.code, "a", "b"))
    cy = to_lobby(db, study.code, "c").token
    first = markers(db, ana, bo, cy)
    assert set(first) == {ana, bo, cy}
    assert markers(db, ana, bo, cy) == first  # nothing written: nothing moved
    S.post_as_participant(db, ana, "hello", request_id="h")
    second = markers(db, ana, bo, cy)
    assert second[ana] != first[ana] and second[bo] != first[bo]  # their room's log
    assert second[cy] == first[cy]  # another stage, another room
    dy = to_lobby(db, study.code, "d").token  # someone else arrives in the lobby
    third = markers(db, ana, bo, cy)
    assert third[cy] != second[cy]  # the lobby's count moved: the waiting page changes
    assert third[ana] == second[ana]
    assert storage.participant_markers(db, []) == {}
    assert markers(db, "not a token") == {}
    assert dy


def test_presence_is_one_statement_for_everyone_and_spares_who_left(db: storage.Database) -> None:
    study = launched(db)
    ana, bo = (t.token for t in seated(db, study.code, "a", "b"))
    leaver = S.join(db, study.code, {"PROLIFIC_PID": "c"}).token
    S.decline(db, leaver)  # at the exit: never touched again
    statements: list[str] = []

    def count(conn, cursor, statement, params, context, executemany) -> None:  # noqa: ANN001
        statements.append(statement)

    later = db.now() + timedelta(seconds=30)
    import sqlalchemy as sa

    sa.event.listen(db.write_engine, "before_cursor_execute", count)
    try:
        changed = storage.mark_present(db, [token_hash(t) for t in (ana, bo, leaver)], later)
    finally:
        sa.event.remove(db.write_engine, "before_cursor_execute", count)
    assert changed == 2
    assert len([s for s in statements if s.lstrip().upper().startswith("UPDATE")]) == 1
    seen = {p.pseudonym: p for p in storage.list_participants(db, study.id)}
    assert sorted(p.last_seen_at == later for p in seen.values()) == [False, True, True]
    # Never backwards: a presence older than the last sign of life changes nothing.
    assert storage.mark_present(db, [token_hash(ana)], later - timedelta(seconds=60)) == 0


def test_every_change_a_page_shows_is_one_notice_on_postgresql(
    db: storage.Database, backend: str
) -> None:
    notices: list[float] = []
    listener = storage.WorkListener(
        db.url, lambda _: notices.append(time.monotonic()), channel=storage.PAGES_CHANNEL
    )
    if backend == "sqlite":
        assert listener.start() is False  # no channel: the process polls
        return
    study = launched(db)
    assert listener.start()
    try:
        assert listener.listening.wait(10)
        time.sleep(0.3)
        notices.clear()  # the one sent when listening starts
        ana, _ = (t.token for t in seated(db, study.code, "a", "b"))
        time.sleep(0.5)
        notices.clear()
        S.post_as_participant(db, ana, "hello", request_id="h")  # one transaction
        deadline = time.monotonic() + 10  # a deadline that polls: the notice arrives, or fails
        while not notices and time.monotonic() < deadline:
            time.sleep(0.01)
        assert notices
        time.sleep(0.5)
        assert len(notices) == 1  # one notice for the transaction, whatever it wrote
        notices.clear()
        S.list_studies(db)  # a read: nothing
        time.sleep(0.5)
        assert notices == []
    finally:
        listener.stop(timeout=5)


def test_this_processs_writes_are_heard_at_once_on_any_database(db: storage.Database) -> None:
    heard = threading.Event()
    stop = storage.after_local_writes(db, heard.set)
    try:
        study = launched(db)
        heard.clear()
        S.join(db, study.code, {"PROLIFIC_PID": "x"})
        assert heard.is_set()
        heard.clear()
        S.list_studies(db)
        assert not heard.is_set()  # a read is no write
    finally:
        stop()
    S.join(db, study.code, {"PROLIFIC_PID": "y"})
    assert not heard.is_set()  # stopped
