"""``Turn``: one agent turn of a durable room, as its stored record says now (docs/design.md, "Durable turns").

A ``Turn`` is a view over one event row plus the moderation verbs. Every verb is a single
optimistic state change in the database (``storage.update_turn_state``): two browser tabs approving
the same draft change it once; a verb that does not fit the turn's current state raises
``ConversationStateError`` and changes nothing. The room's status follows (a decided draft lets the
room go on), and the worker or ``room.step()`` picks it up from there.

Every verb takes ``actor=`` (``conversation.access``): it needs the moderator role, else
``PermissionDenied`` and nothing changes; the actor's identity is what ``data.decisions`` records
as ``by`` (without an actor, the ``by=`` given).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import storage
from conversation.access.roles import Action, Actor, check_identity, require, who
from conversation.boundary import translating
from conversation.exceptions import (
    ConversationStateError,
    ConversationValueError,
    TurnAlreadyDecided,
)
from conversation.rooms.config import RoomConfig
from conversation.text.limits import check_message
from conversation.vocabulary import EventKind, RoomStatus, TurnEntry, TurnState, entry_of

MAX_REASON_CHARS = 2_000
MAX_CONTENT_CHARS = 20_000


@translating
class Turn:
    """One agent turn: ``id``, ``conversation`` (the room id), ``parent``, ``inputs``, ``outputs``,
    ``result``, ``state``, ``saw``, ``model``, ``error``, ``waiting``, ``usage``, ``request_id``."""

    def __init__(self, db: storage.Database, event: storage.Event | TurnEntry) -> None:
        self._db = db
        self._read(event)

    def _read(self, event: storage.Event | TurnEntry) -> None:
        entry = entry_of(event)
        if not isinstance(entry, TurnEntry):
            raise ConversationValueError(
                f"event {entry.row.id} is a {entry.kind} event, not a turn"
            )
        self._event, self._entry = entry.row, entry

    # -- what the record says -----------------------------------------------------------------

    @property
    def event(self) -> storage.Event:
        return self._event

    @property
    def id(self) -> int:
        assert self._event.id is not None
        return self._event.id

    @property
    def conversation(self) -> int:
        return self._event.room_id

    @property
    def seq(self) -> int:
        return self._event.seq

    @property
    def speaker(self) -> str:
        return self._event.speaker

    @property
    def parent(self) -> int | None:
        return self._event.parent_event_id

    @property
    def entry(self) -> TurnEntry:
        """The turn's typed log entry (``vocabulary.log``): what the record means."""
        return self._entry

    @property
    def state(self) -> TurnState:
        return self._entry.state

    @property
    def passed(self) -> bool:
        """The agent chose to say nothing (a ``pass`` entry)."""
        return self._entry.kind is EventKind.PASS

    @property
    def request_id(self) -> str | None:
        return self._event.request_id

    @property
    def saw(self) -> list[int]:
        return list(self._event.saw or [])

    @property
    def model(self) -> str | None:
        return self._event.model

    @property
    def error(self) -> dict[str, Any] | None:
        return dict(self._event.error) if self._event.error else None

    @property
    def attempts(self) -> int:
        return self._event.attempts

    @property
    def inputs(self) -> dict[str, Any]:
        """What the turn was asked with (a copy): speaker, round, activity, what it saw, denials."""
        return {
            "speaker": self.speaker,
            "round": self._event.round,
            "activity": self._event.activity,
            "saw": self.saw,
            "denials": [dict(d) for d in self._entry.denials],
        }

    @property
    def result(self) -> str | None:
        """The message, once the turn is done (``""`` for a pass); None before."""
        return self._event.content if self._entry.is_done else None

    @property
    def outputs(self) -> dict[str, Any]:
        if not self._entry.is_done:
            return {}
        outputs: dict[str, Any] = {"result": self._event.content, "passed": self.passed}
        draft = (self._event.data or {}).get("draft")
        if draft is not None:
            outputs["draft"] = draft
        return outputs

    @property
    def waiting(self) -> list[dict[str, Any]]:
        """The approval this turn waits for (its draft), or ``[]``."""
        if not self._entry.is_draft:
            return []
        return [{"draft": self._event.content, "speaker": self.speaker}]

    @property
    def usage(self) -> dict[str, int | float | None]:
        return {
            "input_tokens": self._event.input_tokens,
            "output_tokens": self._event.output_tokens,
            "cost": self._event.cost,
            "latency": self._event.latency,
        }

    def refresh(self) -> Turn:
        """Re-read the turn from the database (returns self)."""
        self._read(storage.get_event(self._db, self.id))
        return self

    def __repr__(self) -> str:
        return f"Turn(id={self.id}, room={self.conversation}, seq={self.seq}, {self.speaker}, {self.state})"

    # -- moderation ---------------------------------------------------------------------------

    @property
    def draft_version(self) -> str:
        """A version of the draft as read now (the turn and its text): hand it back as
        ``seen=`` to approve or deny exactly that draft."""
        text = f"{self.id}\x00{self._event.content or ''}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def _bound(self, seen: str | None) -> str | None:
        """The draft text a decision is bound to (None: not bound): the turn is read again, and
        ``DraftChanged`` is raised when its draft is not the one ``seen`` names."""
        if seen is None:
            return None
        self.refresh()
        if self._entry.is_draft and self.draft_version != seen:
            raise DraftChanged(
                f"the draft of turn {self.id} ({self.speaker}) changed since you read it; read "
                "it again (nothing was decided)"
            )
        return self._event.content or ""

    def _move(
        self,
        verb: str,
        expected: tuple[str, ...],
        state: str,
        *,
        room_from: tuple[str, ...],
        by: str,
        data: dict[str, Any] | None = None,
        bound: str | None = None,
        **changes: Any,
    ) -> Turn:
        """One write: the turn's move, who did it and when, and the room going on. ``bound``: the
        draft text the decision was made on (refused with ``DraftChanged`` if it is other)."""
        check_identity(by, "by")
        decision = {"verb": verb, "by": by, "at": datetime.now(UTC).isoformat(timespec="seconds")}
        decisions = [*self._entry.decisions, decision]
        updated = storage.update_turn_state(
            self._db,
            self.id,
            expected_state=expected,
            state=state,
            data={**(data or {}), "decisions": decisions},
            room_status=RoomStatus.RUNNING,
            room_from=room_from,
            expected_content=bound,
            **changes,
        )
        if updated is None:
            current = storage.get_event(self._db, self.id)
            if bound is not None and current.state in expected and current.content != bound:
                raise DraftChanged(
                    f"the draft of turn {self.id} ({self.speaker}) changed since you read it; "
                    "read it again (nothing was decided)"
                )
            raise _refusal(verb, current, expected)
        self._read(updated)
        return self

    def approve(
        self,
        content: str | None = None,
        *,
        by: str = "user",
        actor: Actor | None = None,
        seen: str | None = None,
    ) -> Turn:
        """Publish the waiting draft (optionally edited first: the original draft is kept in
        ``data.draft``); the room goes on. ``by`` is who approved (recorded). ``seen``: the
        ``draft_version`` the person read; another draft now raises ``DraftChanged``."""
        by = _acting(actor, by)
        bound = self._bound(seen)
        changes: dict[str, Any] = {}
        data: dict[str, Any] | None = None
        if content is not None:
            check_message(content, "an edited message", MAX_CONTENT_CHARS)
            changes = {"content": content}
            data = {"draft": self._event.content, "edited": True, "edited_by": by}
        if self._entry.candidates:  # drafts to pick among, not one draft to approve
            raise ConversationStateError(
                f"turn {self.id} waits for a coordinator's pick among drafted candidates; "
                "use pick(speaker) instead of approve"
            )
        verb = "edit" if content is not None else "approve"
        return self._move(
            verb,
            (TurnState.WAITING,),
            TurnState.DONE,
            room_from=_WAITING,
            by=by,
            data=data,
            bound=bound,
            **changes,
        )

    def deny(
        self,
        reason: str,
        *,
        by: str = "user",
        actor: Actor | None = None,
        seen: str | None = None,
    ) -> Turn:
        """Refuse the draft: the agent is told why and tries again (or passes). After the room's
        ``max_denials`` the turn is abandoned instead (it counts as a pass). ``seen``: as for
        ``approve``."""
        by = _acting(actor, by)
        if not isinstance(reason, str) or not reason.strip():
            raise ConversationValueError("deny needs a reason (the agent is told it); got none")
        if len(reason) > MAX_REASON_CHARS:
            raise ConversationValueError(f"a reason is limited to {MAX_REASON_CHARS} characters")
        bound = self._bound(seen)
        room = storage.get_room(self._db, self.conversation)
        limit = RoomConfig.from_dict(room.config).max_denials
        denials = list(self._entry.denials)
        denials.append({"draft": self._event.content, "reason": reason, "by": by})
        state = TurnState.RUNNING if len(denials) <= limit else TurnState.ABANDONED
        return self._move(
            "deny",
            (TurnState.WAITING,),
            state,
            room_from=_WAITING,
            by=by,
            content="",
            data={"denials": denials},
            bound=bound,
        )

    def pick(self, speaker: str, *, by: str = "user", actor: Actor | None = None) -> Turn:
        """Choose one of a coordinator-after turn's drafted candidates (a person coordinates):
        it becomes ``speaker``'s message; the other drafts stay with it as candidates."""
        by = _acting(actor, by)
        candidates = self.candidates
        chosen = next(
            (c for c in candidates if c.get("speaker") == speaker and not c.get("passed")), None
        )
        if chosen is None:
            offered = [c.get("speaker") for c in candidates if not c.get("passed")]
            raise ConversationValueError(
                f"{speaker!r} drafted no candidate for turn {self.id}; pick one of {offered}"
            )
        marked = [{**c, "chosen": c.get("speaker") == speaker} for c in candidates]
        return self._move(
            "pick",
            (TurnState.WAITING,),
            TurnState.DONE,
            room_from=_WAITING,
            by=by,
            data={
                "candidates": marked,
                "picked": speaker,
                "picked_by": by,
                "chosen_because": f"picked by {by}",
            },
            speaker=speaker,
            content=str(chosen.get("text", "")),
        )

    @property
    def candidates(self) -> list[dict[str, Any]]:
        """The drafts of a coordinator-after turn (``speaker``, ``text``, ``passed``,
        ``chosen``), or ``[]``: audited, never shown to agents."""
        return [dict(c) for c in self._entry.candidates]

    def stop(self, *, by: str = "user", actor: Actor | None = None) -> Turn:
        """Stop the turn wherever it is: it ends ``stopped`` (it counts as a pass; a model reply
        still in flight is refused by the fence on the turn's state)."""
        by = _acting(actor, by)
        return self._move(
            "stop",
            (TurnState.RUNNING, TurnState.WAITING),
            TurnState.STOPPED,
            room_from=_WAITING,
            by=by,
        )

    def stop_drafting(self, *, by: str = "user", actor: Actor | None = None) -> bool:
        """Stop the reply this running turn is streaming (docs/streaming.md): the process that
        streams it sees the request at its next partial-draft write (a few times a second),
        closes the request and records a denial "stopped while drafting" by ``by`` (the agent
        tries again, as after any denial). Works from any process: the request is a row in the
        database. ``False`` when the turn is not running any more (nothing to stop)."""
        by = _acting(actor, by)
        return storage.request_stop(self._db, self.id, by)

    @property
    def draft(self) -> storage.PartialDraft | None:
        """The partial text of this running turn's streaming reply (never a message), or None."""
        return storage.partial_draft(self._db, self.id)

    def resume(self, *, by: str = "user", actor: Actor | None = None) -> Turn:
        """Go on with an interrupted turn (its retry budget spent, or its process gone)."""
        by = _acting(actor, by)
        return self._move(
            "resume",
            (TurnState.INTERRUPTED,),
            TurnState.RUNNING,
            room_from=(RoomStatus.FAILED,),
            by=by,
            error=None,
        )

    def abandon(self, *, by: str = "user", actor: Actor | None = None) -> Turn:
        """End a waiting or interrupted turn without going on: ``abandoned`` (counts as a pass)."""
        by = _acting(actor, by)
        return self._move(
            "abandon",
            (TurnState.WAITING, TurnState.INTERRUPTED),
            TurnState.ABANDONED,
            room_from=(RoomStatus.WAITING, RoomStatus.FAILED),
            by=by,
        )


def _acting(actor: Actor | None, by: str) -> str:
    """Who makes a moderation move: checked against the role, then the identity to record."""
    require(actor, Action.MODERATE)
    return who(actor, by)


_WAITING = (RoomStatus.WAITING,)


class DraftChanged(ConversationStateError):
    """The draft a person read is not the turn's draft any more (another moderator denied it and
    the agent drafted again): nothing was decided; read the new draft and decide again."""


_PAST = {
    "pick": "picked",
    "approve": "approved",
    "edit": "edited and approved",
    "deny": "denied",
    "stop": "stopped",
    "resume": "resumed",
    "abandon": "abandoned",
}


def _refusal(verb: str, current: storage.Event, expected: tuple[str, ...]) -> Exception:
    """Why a moderation verb did not apply: someone else decided first (``TurnAlreadyDecided``,
    naming who and what), or the turn is simply not in a state the verb works on."""
    decisions = entry_of(current).decisions
    if decisions:
        last = decisions[-1]
        done = str(last.get("verb"))
        return TurnAlreadyDecided(
            f"cannot {verb} turn {current.id} ({current.speaker}): it was already "
            f"{_PAST.get(done, done)} by {last.get('by')} at "
            f"{last.get('at')}; it is {current.state} now",
            by=str(last.get("by")),
            verb=done,
        )
    return ConversationStateError(
        f"cannot {verb} turn {current.id} ({current.speaker}): it is {current.state}, "
        f"and {verb} needs a turn that is {' or '.join(expected)}"
    )


__all__ = ["DraftChanged", "Turn"]
