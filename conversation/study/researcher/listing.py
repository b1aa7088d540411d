"""Every study at a glance: its code, name and status, its participants by where they are and
its groups by status (the study monitor's picker, scripts).

Three reads in all, whatever the number of studies (the studies, then grouped counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import storage
from conversation.study.record import Study


@dataclass(frozen=True, slots=True)
class StudySummary:
    """One study and its counts. ``participants``: by stage (``consent``, ``pre_survey``,
    ``lobby``, ``room``, ``post_survey``), and for those who left by exit status (``completed``,
    ``declined``, ``dropped``, ...); ``groups``: by status (``running``, ``ended``, ...)."""

    study: Study
    created_at: datetime
    participants: dict[str, int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)
    places: int = 0

    @property
    def full(self) -> bool:
        """Whether the cap's places are all taken (people who consented): the link says
        "full" to newcomers."""
        return self.study.cap is not None and self.places >= self.study.cap

    @property
    def code(self) -> str:
        return self.study.code

    @property
    def people(self) -> int:
        """Everyone who ever joined (whatever became of them)."""
        return sum(self.participants.values())

    def line(self) -> str:
        """``CODE · name (status) · 6 people (2 in a room, 4 completed) · 3 groups`` (the
        status is followed by ``, full`` when the cap's places are taken)."""
        where = ", ".join(f"{n} {_WORDS.get(k, k)}" for k, n in sorted(self.participants.items()))
        people = f"{self.people} {'person' if self.people == 1 else 'people'}"
        groups = sum(self.groups.values())
        return (
            f"{self.code} · {self.study.name} ({self.study.status}{', full' if self.full else ''})"
            f" · {people}"
            + (f" ({where})" if where else "")
            + f" · {groups} {'group' if groups == 1 else 'groups'}"
        )


_WORDS = {
    "consent": "at consent",
    "pre_survey": "in the pre-survey",
    "lobby": "in the lobby",
    "room": "in a room",
    "post_survey": "in the post-survey",
}


def list_studies(db: storage.Database) -> list[StudySummary]:
    """Every study, newest first, with its counts (:class:`StudySummary`)."""
    counts = storage.study_counts(db)
    empty = storage.StudyCounts(participants={}, groups={})
    found = []
    for row in storage.list_studies(db):
        these = counts.get(int(row.id or 0), empty)
        found.append(
            StudySummary(
                study=Study.of(row),
                created_at=row.created_at,
                participants=dict(these.participants),
                groups=dict(these.groups),
                places=these.places,
            )
        )
    return found


__all__ = ["StudySummary", "list_studies"]
