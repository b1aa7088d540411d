"""The room watcher: one per app process, it feeds every participant event stream the process
holds (docs/participant-page.md).

Each open page holds one stream (:meth:`Hub.open`); a person with two tabs holds two, fed from one
read. The hub keeps, per person, the view it last read and the marker of that read. A *cycle*
reads the markers of everyone watched in one statement (``conversation.study.view_markers``),
reads the view again only of those whose marker moved (or whose view said it changes by the
clock at a time now past: a paced message appearing), and sends each of their streams what
changed (``wire.pushes``). A cycle runs:

- at once when woken: a write committed by this process (a post, the runner's turns, the study's
  clock: ``conversation.study.on_local_commit``), or on PostgreSQL a ``NOTIFY`` from another
  process's write (``conversation.study.ChangeListener``);
- otherwise every ``poll_seconds`` (another process's writes on SQLite, a lost notice).

Presence is derived from the streams: every ``presence_seconds`` one write says that everyone
with an open stream is here (``conversation.study.note_present``). The database calls run in
worker threads, one cycle at a time; the event loop only moves events to the streams. When the
database cannot be reached, the streams are told (``outage``) and told again when it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ui.participant.wire import Push, Shown, pushes

log = logging.getLogger(__name__)

#: A burst of writes (a post and the runner's claim right after it) is read by one cycle.
GATHER_SECONDS = 0.01
#: The shortest time between two cycles (bounds the watcher's CPU while writes pour in).
MIN_CYCLE_SECONDS = 0.03
#: How many views a cycle reads at once.
READERS = 4
#: Events a slow page may have waiting before its stream is closed (it reconnects and gets the
#: whole view again).
MAX_QUEUED = 500


def _study():  # type: ignore[no-untyped-def]
    from conversation import study

    return study


def _unavailable() -> type[Exception]:
    from conversation.exceptions import StorageUnavailableError

    return StorageUnavailableError


class Stream:
    """One open page's events, in order (an async iterator of :class:`Push`)."""

    def __init__(self, token: str) -> None:
        self.token = token
        self._queue: asyncio.Queue[Push | None] = asyncio.Queue()
        self.closed = False

    def send(self, items: list[Push]) -> None:
        if self.closed:
            return
        if self._queue.qsize() + len(items) > MAX_QUEUED:
            self.end()  # too far behind: it reconnects and starts from the whole view
            return
        for item in items:
            self._queue.put_nowait(item)

    def end(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)

    async def __aiter__(self) -> AsyncIterator[Push]:
        while True:
            item = await self._queue.get()
            if item is None:
                return
            yield item


@dataclass
class _Seat:
    """One watched person: their streams, the view last read, its marker, what was sent."""

    token: str
    streams: set[Stream] = field(default_factory=set)
    marker: tuple[Any, ...] | None = None
    shown: Shown | None = None
    changes_at: datetime | None = None
    heartbeat_seconds: float = 10.0
    #: In a room: whose streaming replies the seat is shown (``study.draft_rule``; None: none),
    #: the room it was read for, and the draft last sent (seq, writes).
    draft_rule: Any = None
    rule_room: int | None = None
    draft: tuple[int, int] | None = None


class Hub:
    """The process's watcher (see the module docstring). ``database()`` gives the process's
    ``storage.Database``; the hub starts its task on the first stream."""

    def __init__(
        self,
        database: Callable[[], Any],
        *,
        poll_seconds: float,
        presence_seconds: float | None = None,
    ) -> None:
        self._database = database
        self.poll_seconds = poll_seconds
        self.presence_seconds = presence_seconds
        self._seats: dict[str, _Seat] = {}
        self._woken = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._hooks: list[Callable[[], None]] = []
        self._down = False
        self._readers = ThreadPoolExecutor(READERS, thread_name_prefix="participant-views")
        self.cycles = 0  # how many cycles ran (tests and the benchmark read it)

    # -- streams ----------------------------------------------------------------------------

    async def open(self, token: str) -> Stream:
        """A stream of ``token``'s page, starting with their whole view. Raises
        ``NotAParticipant`` for a token nobody holds, ``StorageUnavailableError`` when the
        database cannot be reached."""
        self._start()
        study = _study()
        db = self._database()

        def read() -> tuple[Any, Any, Any]:
            markers = study.view_markers(db, [token])
            view = study.participant_view(db, token)
            rule = study.draft_rule(db, token) if view.room_id else None
            return markers.get(token), view, rule

        marker, view, rule = await asyncio.to_thread(read)
        seat = self._seats.setdefault(token, _Seat(token))
        seat.draft_rule, seat.rule_room = rule, view.room_id
        seat.draft = None  # the new stream is sent the current draft by the next cycle
        self.wake()
        stream = Stream(token)
        initial, _ = pushes(None, view)
        stream.send(initial)
        self._publish(seat, marker, view)  # the person's other tabs catch up with this read
        seat.streams.add(stream)
        return stream

    def close(self, stream: Stream) -> None:
        stream.end()
        seat = self._seats.get(stream.token)
        if seat is None:
            return
        seat.streams.discard(stream)
        if not seat.streams:
            del self._seats[stream.token]

    @property
    def watched(self) -> int:
        """How many people have an open stream here."""
        return len(self._seats)

    def wake(self) -> None:
        """Look for changes now (call from the event loop's thread)."""
        self._woken.set()

    def wake_threadsafe(self) -> None:
        """Look for changes now, from any thread (a commit hook, the ``NOTIFY`` listener)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(self._woken.set)

    # -- the task ---------------------------------------------------------------------------

    def _start(self) -> None:
        if self._tasks:
            return
        self._loop = asyncio.get_running_loop()
        self._tasks = [
            self._loop.create_task(self._watch(), name="participant-hub"),
            self._loop.create_task(self._presence(), name="participant-presence"),
        ]
        study = _study()
        db = self._database()
        self._hooks.append(study.on_local_commit(db, self.wake_threadsafe))
        listener = study.ChangeListener(db, lambda _room: self.wake_threadsafe())
        if listener.start():
            self._hooks.append(listener.stop)

    async def stop(self) -> None:
        """End every stream and the hub's tasks (the server stops)."""
        for seat in list(self._seats.values()):
            for stream in list(seat.streams):
                stream.end()
        self._seats.clear()
        for hook in self._hooks:
            with contextlib.suppress(Exception):
                hook()
        self._hooks.clear()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        self._readers.shutdown(wait=False)

    async def _watch(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), self.poll_seconds)
            await asyncio.sleep(GATHER_SECONDS)
            self._woken.clear()
            try:
                await self.cycle()
            except Exception:  # noqa: BLE001 - a bad cycle must not end the watcher
                log.exception("the participant watcher's cycle failed")
            await asyncio.sleep(MIN_CYCLE_SECONDS)

    async def cycle(self) -> int:
        """One look at everyone watched (see the module docstring); returns how many views
        were read again."""
        if not self._seats:
            return 0
        self.cycles += 1
        study = _study()
        db = self._database()
        known = {token: seat.marker for token, seat in self._seats.items()}
        due = {
            token
            for token, seat in self._seats.items()
            if seat.changes_at is not None and seat.changes_at <= datetime.now(UTC)
        }

        rooms = {token: seat.rule_room for token, seat in self._seats.items()}
        rules = {t: s.draft_rule for t, s in self._seats.items() if s.draft_rule is not None}
        typing_now = {t: s.shown.typing if s.shown else () for t, s in self._seats.items()}

        def view_of(token: str) -> Any:
            try:
                return study.participant_view(db, token)
            except study.NotAParticipant:
                return None

        def read() -> tuple[dict[str, tuple[Any, Any]], dict[str, Any], dict[str, Any]]:
            markers = study.view_markers(db, list(known))
            out: dict[str, tuple[Any, Any]] = {}
            changed = []
            for token, before in known.items():
                marker = markers.get(token)
                if marker is None:
                    out[token] = (None, None)  # nobody holds it any more
                elif marker != before or token in due:
                    changed.append((token, marker))
            # The views are read side by side: on a database server each is a few round trips,
            # which overlap (one after the other, a busy cycle waited on the network).
            views = self._readers.map(view_of, [token for token, _ in changed])
            for (token, marker), view in zip(changed, views, strict=True):
                out[token] = (marker, view) if view is not None else (None, None)
            new_rules = {  # a seat that entered or left a room
                token: study.draft_rule(db, token) if view.room_id else None
                for token, (_, view) in out.items()
                if view is not None and view.room_id != rooms.get(token)
            }
            current = {**rules, **{t: r for t, r in new_rules.items() if r is not None}}
            typing = {
                token: out[token][1].typing
                if token in out and out[token][1] is not None
                else typing_now.get(token, ())
                for token in current
            }
            return out, new_rules, study.seat_drafts(db, current, typing)

        try:
            fresh, new_rules, drafts = await asyncio.to_thread(read)
        except _unavailable():
            self._say_down(True)
            return 0
        self._say_down(False)
        for token, (marker, view) in fresh.items():
            seat = self._seats.get(token)
            if seat is None:
                continue
            if view is None:
                for stream in list(seat.streams):
                    stream.send([Push("gone", None)])
                    stream.end()
                continue
            if token in new_rules:
                seat.draft_rule, seat.rule_room = new_rules[token], view.room_id
            self._publish(seat, marker, view)
        for token, seat in self._seats.items():
            if seat.draft_rule is not None:
                self._publish_draft(seat, drafts.get(token))
        return len(fresh)

    def _publish_draft(self, seat: _Seat, draft: Any) -> None:
        """A streaming reply's text so far (once per write), or its end when it went away
        without becoming a message (stopped, failed): the page removes it."""
        shown = seat.shown
        if draft is not None:
            if seat.draft == (draft.seq, draft.writes):
                return
            seat.draft = (draft.seq, draft.writes)
            item = {"seq": draft.seq, "speaker": draft.speaker, "text": draft.text}
        elif seat.draft is not None:
            seq = seat.draft[0]
            seat.draft = None
            if shown is not None and seq in shown.seqs:
                return  # it became the message the page already has
            item = {"seq": seq, "speaker": "", "text": None}
        else:
            return
        for stream in list(seat.streams):
            stream.send([Push("draft", item)])

    def _publish(self, seat: _Seat, marker: Any, view: Any) -> None:
        items, seat.shown = pushes(seat.shown, view)
        seat.marker = marker
        seat.changes_at = view.changes_at
        seat.heartbeat_seconds = float(view.heartbeat_seconds or 10)
        if items:
            for stream in list(seat.streams):
                stream.send(items)

    def _say_down(self, down: bool) -> None:
        if down == self._down:
            return
        self._down = down
        for seat in self._seats.values():
            for stream in list(seat.streams):
                stream.send([Push("outage", {"down": down})])

    async def _presence(self) -> None:
        """Every interval (the shortest heartbeat of the studies watched, unless
        ``presence_seconds`` says otherwise), one write: everyone with an open stream is here."""
        study = _study()
        while True:
            beats = [seat.heartbeat_seconds for seat in self._seats.values()]
            await asyncio.sleep(self.presence_seconds or min(beats, default=5.0))
            tokens = list(self._seats)
            if not tokens:
                continue
            try:
                await asyncio.to_thread(study.note_present, self._database(), tokens)
            except Exception:  # noqa: BLE001 - said by the cycle (outage); try again later
                log.info("presence not written this time", exc_info=True)


__all__ = ["GATHER_SECONDS", "MAX_QUEUED", "Hub", "Stream"]
