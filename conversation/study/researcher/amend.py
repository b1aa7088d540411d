"""Launching a study from its frozen bundle, amending it, and reading its preregistration.

An amendment is explicit: the amended definition, a reason, the frozen fields it changes (at
least one: an edit of operational fields is ``update_definition``'s). It is stored as the
study's next definition version with the amended bundle (its amendments listed, so its hash
differs) in one write, numbered, timestamped, with who made it; the monitor and every export
list the amendments.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import storage
from conversation.access.roles import Action, Actor, require
from conversation.boundary import translated
from conversation.exceptions import ConversationValueError
from conversation.study.definition.document import StudyDefinition
from conversation.study.preregistration.bundle import Bundle, changed_fields, freeze, load_bundle
from conversation.study.record import Study, get_study, study_definition
from conversation.study.researcher.launch import check_same_design, launch_study
from conversation.text.limits import check_text
from conversation.vocabulary import StudyEventKind

MAX_REASON_CHARS = 4_000


@dataclass(frozen=True, slots=True)
class Amendment:
    """One amendment: its number, when, by whom, why, the frozen fields it changed, the
    definition version it made and the hash of the bundle after it."""

    number: int
    at: datetime
    by: str | None
    reason: str
    changes: list[str]
    version: int
    bundle_hash: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "at": self.at.isoformat(),
            "by": self.by,
            "reason": self.reason,
            "changes": list(self.changes),
            "version": self.version,
            "bundle_hash": self.bundle_hash,
        }


@dataclass(frozen=True, slots=True)
class Preregistration:
    """A study's preregistration: the bundle in force (None: launched without one), the hash it
    was launched with, and the amendments since."""

    bundle: dict[str, Any] | None
    launched_hash: str | None
    amendments: list[Amendment]

    @property
    def frozen(self) -> bool:
        return self.bundle is not None

    @property
    def bundle_hash(self) -> str | None:
        return None if self.bundle is None else str(self.bundle["hash"])


def launch_frozen(db: storage.Database, bundle: Bundle, *, actor: Actor | None = None) -> Study:
    """Launch the study a frozen bundle holds: preregistered, its frozen fields changed only by
    :func:`amend_study`."""
    if not isinstance(bundle, Bundle):
        raise ConversationValueError("launch_frozen takes a Bundle (freeze or read_bundle)")
    return launch_study(db, bundle.definition, actor=actor, bundle=bundle)


def amend_study(
    db: storage.Database,
    code: str,
    definition: StudyDefinition,
    *,
    reason: str,
    actor: Actor | None = None,
) -> Amendment:
    """Amend a preregistered study (see the module doc). ``ConversationValueError`` when the
    study is not preregistered, the reason is empty, no frozen field changes, or the design
    (conditions, seats, groups) would."""
    require(actor, Action.CREATE_EXPERIMENT)
    check_text(reason, "reason", MAX_REASON_CHARS)
    study = get_study(db, code)
    with translated():
        row = storage.get_study(db, study.code)
    if row.bundle is None:
        raise ConversationValueError(
            f"study {code!r} was launched without a frozen bundle: edit it with "
            "update_definition (nothing to amend)"
        )
    current = study_definition(db, study)
    check_same_design(current, definition)
    changes = changed_fields(current.to_dict(), definition.to_dict())
    if not changes:
        raise ConversationValueError(
            "the amended definition changes no frozen field; operational fields "
            "(participants.cap, exit.redirect) change with update_definition"
        )
    document = definition.to_dict()
    document["seed"] = study.seed  # the frozen master seed stays (groups were drawn from it)
    earlier = list(load_bundle(row.bundle).data.get("amendments") or [])
    by = actor.identity if actor else "user"
    entry = {"number": len(earlier) + 1, "reason": reason, "changes": changes, "by": by}
    amended = freeze(
        type(definition)(data=document, model=definition.model),
        seed=study.seed,
        amendments=[*earlier, {**entry, "previous_hash": row.bundle_hash}],
    )
    with translated():
        stored = storage.amend_study(
            db,
            study.id,
            definition=document,
            bundle=amended.to_dict(),
            bundle_hash=amended.hash,
            reason=reason,
            changes=changes,
            by=by,
            note_kind=StudyEventKind.AMENDED,
        )
    return _amendment(stored)


def _amendment(row: Any) -> Amendment:
    return Amendment(
        number=int(row.number),
        at=row.at,
        by=row.by,
        reason=row.reason,
        changes=list(row.changes or []),
        version=int(row.version),
        bundle_hash=row.bundle_hash,
    )


def study_amendments(db: storage.Database, code: str) -> list[Amendment]:
    """The study's amendments, in order (empty for a study launched without a bundle)."""
    study = get_study(db, code)
    with translated():
        return [_amendment(r) for r in storage.study_amendments(db, study.id)]


def study_preregistration(db: storage.Database, code: str) -> Preregistration:
    """The study's bundle in force, its launch hash and its amendments."""
    study = get_study(db, code)
    with translated():
        row = storage.get_study(db, study.code)
        amendments = [_amendment(r) for r in storage.study_amendments(db, study.id)]
    launched = None
    if row.bundle is not None:
        history = row.bundle.get("amendments") or []
        launched = history[0]["previous_hash"] if history else row.bundle_hash
    return Preregistration(bundle=row.bundle, launched_hash=launched, amendments=amendments)


__all__ = [
    "Amendment",
    "Preregistration",
    "amend_study",
    "launch_frozen",
    "study_preregistration",
    "study_amendments",
]
