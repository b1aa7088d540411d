"""A preregistered study refuses changes to its frozen fields: :func:`refuse_frozen_changes` is
the one rule, used by ``update_definition`` (an edit) and answered by ``amend_study`` (an
explicit amendment, with a reason)."""

from __future__ import annotations

from typing import Any

import storage
from conversation.boundary import translated
from conversation.exceptions import ConversationValueError
from conversation.study.definition.document import StudyDefinition
from conversation.study.preregistration.bundle import changed_fields


class FrozenFieldChanged(ConversationValueError):
    """An edit of a preregistered study changes frozen fields (``.fields``); amend instead."""

    def __init__(self, fields: list[str], bundle_hash: str) -> None:
        self.fields = fields
        super().__init__(
            f"{', '.join(fields)}: frozen by the study's preregistration (bundle "
            f"{bundle_hash[:12]}); change them with an amendment and its reason: "
            "amend_study(db, code, definition, reason=...) or the monitor's Amend"
        )


def frozen_hash(db: storage.Database, study: Any) -> str | None:
    """The hash of the study's frozen bundle in force (None: not preregistered)."""
    with translated():
        return storage.get_study(db, study.code).bundle_hash  # type: ignore[no-any-return]


def refuse_frozen_changes(
    db: storage.Database, study: Any, current: StudyDefinition, definition: StudyDefinition
) -> None:
    """:class:`FrozenFieldChanged` when ``study`` is preregistered and ``definition`` changes
    a frozen field of ``current``; nothing for a study launched without a bundle."""
    bundle_hash = frozen_hash(db, study)
    if bundle_hash is None:
        return
    fields = changed_fields(current.to_dict(), definition.to_dict())
    if fields:
        raise FrozenFieldChanged(fields, bundle_hash)


__all__ = ["FrozenFieldChanged", "frozen_hash", "refuse_frozen_changes"]
