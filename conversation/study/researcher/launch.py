"""Launching a study and the researcher's switches: lock, unlock, close, cap, edits, links.

A launched study is stored with its definition (as written) and an experiment (status ``draft``)
that its groups' rooms join one at a time. Its ``code`` is the id in the participant link: short,
unguessable enough not to be enumerated by hand, and URL-safe.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import storage
from conversation.access.roles import Action, Actor, require
from conversation.boundary import translated
from conversation.exceptions import ConversationValueError
from conversation.experiments.design import experiment_budget
from conversation.study.definition.document import StudyDefinition
from conversation.study.preregistration.frozen import refuse_frozen_changes
from conversation.study.record import Study, get_study, study_definition


@dataclass(frozen=True, slots=True)
class StudyLinks:
    participant: str
    monitor: str


def launch_study(
    db: storage.Database,
    definition: StudyDefinition,
    *,
    actor: Actor | None = None,
    bundle: Any = None,
) -> Study:
    """Store the study (``open``) and its experiment; the first group's room is created when
    the lobby can form it. ``actor`` needs the researcher role. ``bundle``: the frozen bundle
    (``preregistration.Bundle``) ``definition`` comes from: the study is preregistered, its
    frozen fields change only by amendments (``preregistration.launch_frozen``)."""
    require(actor, Action.CREATE_EXPERIMENT)
    if not isinstance(definition, StudyDefinition):
        raise ConversationValueError("launch_study takes a StudyDefinition (load_definition)")
    design = definition.design()
    experiment_budget(design)
    model = definition.model
    seed = model.seed if model.seed is not None else secrets.randbelow(2**62)
    with translated():
        row = storage.create_study(
            db,
            code=secrets.token_urlsafe(6).replace("-", "x").replace("_", "y"),
            name=model.name,
            definition=definition.to_dict(),
            seed=seed,
            cap=model.participants.cap,
            experiment_config=design,
            bundle=bundle.to_dict() if bundle is not None else None,
            bundle_hash=bundle.hash if bundle is not None else None,
        )
    return Study.of(row)


def study_links(code: str, base_url: str = "http://localhost:8501") -> StudyLinks:
    """The participant link and the researcher's monitor link of a study."""
    base = base_url.rstrip("/")
    return StudyLinks(
        participant=f"{base}/participate?study={quote(code)}",
        monitor=f"{base}/study_monitor?study={quote(code)}",
    )


def lock_study(db: storage.Database, code: str, *, actor: Actor | None = None) -> Study:
    """Refuse new participants (those already in go on)."""
    return _set(db, code, actor, status="locked", event="locked")


def unlock_study(db: storage.Database, code: str, *, actor: Actor | None = None) -> Study:
    return _set(db, code, actor, status="open", event="unlocked")


def close_study(db: storage.Database, code: str, *, actor: Actor | None = None) -> Study:
    """End recruitment for good (a closed study says so; participants already in go on)."""
    return _set(db, code, actor, status="closed", event="closed")


def set_cap(
    db: storage.Database, code: str, cap: int | None, *, actor: Actor | None = None
) -> Study:
    """At most ``cap`` participants admitted (None: no cap)."""
    if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
        raise ConversationValueError(f"cap={cap!r} must be a whole number >= 1, or None")
    return _set(db, code, actor, cap=cap, event="cap", data={"cap": cap})


def _set(
    db: storage.Database,
    code: str,
    actor: Actor | None,
    *,
    event: str,
    data: dict[str, Any] | None = None,
    **changes: Any,
) -> Study:
    require(actor, Action.CONTROL)
    study = get_study(db, code)
    with translated():
        row = storage.update_study(db, study.id, **changes)
        storage.record_study_event(
            db, study.id, event, data={**(data or {}), "by": actor.identity if actor else "user"}
        )
    return Study.of(row)


def update_definition(
    db: storage.Database,
    code: str,
    definition: StudyDefinition,
    *,
    actor: Actor | None = None,
) -> Study:
    """Edit a launched study's definition (its texts, timings, rules, codes, surveys): stored as
    the next version, in force for everyone assigned from now on (each participant keeps the
    version they were assigned under). Its conditions and their seats cannot change once
    launched (groups were drawn from them): ``ConversationValueError`` says so."""
    require(actor, Action.CREATE_EXPERIMENT)
    study = get_study(db, code)
    current = study_definition(db, study)
    refuse_frozen_changes(db, study, current, definition)
    check_same_design(current, definition)
    with translated():
        row = storage.update_study(db, study.id, definition=definition.to_dict())
        storage.record_study_event(
            db,
            study.id,
            "definition_changed",
            data={"version": row.version, "by": actor.identity if actor else "user"},
        )
    return Study.of(row)


def check_same_design(current: StudyDefinition, definition: StudyDefinition) -> None:
    """``ConversationValueError`` unless ``definition`` keeps the launched study's conditions,
    their seats and its number of groups (groups were drawn from them)."""
    before = [(c.label, c.seats) for c in current.conditions]
    after = [(c.label, c.seats) for c in definition.conditions]
    if before != after or current.model.experiment.groups != definition.model.experiment.groups:
        raise ConversationValueError(
            "experiment.conditions: the conditions, their seats and the number of groups cannot "
            "change once the study is launched; launch a new study for another design"
        )


__all__ = [
    "StudyLinks",
    "check_same_design",
    "close_study",
    "launch_study",
    "lock_study",
    "set_cap",
    "study_links",
    "unlock_study",
    "update_definition",
]
