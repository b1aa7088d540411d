"""Preregistration (issue 34): a study frozen before it runs (``freeze``: a bundle with a
content hash) and the one rule that refuses an edit of its frozen fields
(``refuse_frozen_changes``). Launching from a bundle and amending are the researcher's acts
(``study.researcher.amend``)."""

from conversation.study.preregistration.bundle import (
    OPERATIONAL,
    Bundle,
    changed_fields,
    freeze,
    is_bundle_file,
    load_bundle,
    read_bundle,
)
from conversation.study.preregistration.frozen import FrozenFieldChanged, refuse_frozen_changes

__all__ = [
    "OPERATIONAL",
    "Bundle",
    "FrozenFieldChanged",
    "changed_fields",
    "freeze",
    "is_bundle_file",
    "load_bundle",
    "read_bundle",
    "refuse_frozen_changes",
]
