"""The lobby: a balanced randomisation of waiting people into groups, recorded.

:func:`draw_group` is pure: from the conditions (their human seats), how many groups each has,
the target per condition and the people waiting (in arrival order), it draws the next group.
Among the conditions still short of the target whose seats the waiting people can fill (or,
``fill``, any of them: the empty seats go to their stand-in agents), those with the fewest
groups so far are eligible (balance); one is drawn with ``random.Random(seed)``, where the seed
is derived from the study's master seed and the group's index, so the draw can be replayed.
The earliest arrivals take the group; the same generator deals them the seats. Everything the
draw used is returned in ``assignment`` and stored with the group and each ``assigned`` event.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conversation.vocabulary import SeatHolder


@dataclass(frozen=True, slots=True)
class Draw:
    """The next group: its condition, number (replicate), who holds each seat (a participant
    id, or ``"agent"``), and the record of the draw."""

    condition: str
    number: int
    seats: dict[str, int | str]
    assignment: dict[str, Any] = field(default_factory=dict)

    @property
    def people(self) -> list[int]:
        return [p for p in self.seats.values() if isinstance(p, int)]

    @property
    def agent_seats(self) -> list[str]:
        return [s for s, p in self.seats.items() if p == SeatHolder.AGENT]


def group_seed(master_seed: int, group_index: int) -> int:
    """The seed of the study's ``group_index``-th draw (1-based), from its master seed."""
    digest = hashlib.sha256(f"{master_seed}:{group_index}".encode()).hexdigest()
    return int(digest[:15], 16)


def draw_group(
    conditions: Sequence[tuple[str, Sequence[str]]],
    counts: Mapping[str, int],
    target: int,
    waiting: Sequence[int],
    master_seed: int,
    *,
    fill: bool = False,
) -> Draw | None:
    """The next group, or None when none can be formed now (see the module docstring).
    ``conditions``: ``(label, human seats)`` in design order; ``waiting``: participant ids in
    arrival order."""
    if not waiting:
        return None
    open_ = [(label, seats) for label, seats in conditions if counts.get(label, 0) < target]
    fitting = [(label, seats) for label, seats in open_ if fill or len(seats) <= len(waiting)]
    if not fitting:
        return None
    fewest = min(counts.get(label, 0) for label, _ in fitting)
    eligible = [(label, seats) for label, seats in fitting if counts.get(label, 0) == fewest]
    index = sum(counts.values()) + 1
    seed = group_seed(master_seed, index)
    rng = random.Random(seed)
    label, seats = eligible[rng.randrange(len(eligible))]
    people = list(waiting[: len(seats)])
    dealt = rng.sample(list(seats), len(seats))
    holders: dict[str, int | str] = {seat: SeatHolder.AGENT for seat in seats}
    for seat, person in zip(dealt, people, strict=False):
        holders[seat] = person
    ordered = {seat: holders[seat] for seat in seats}  # the design's seat order
    return Draw(
        condition=label,
        number=counts.get(label, 0) + 1,
        seats=ordered,
        assignment={
            "seed": seed,
            "master_seed": master_seed,
            "group_index": index,
            "eligible_conditions": [lbl for lbl, _ in eligible],
            "eligible_participants": list(waiting),
            "counts_before": dict(counts),
            "filled_with_agents": [s for s, p in ordered.items() if p == SeatHolder.AGENT],
        },
    )


__all__ = ["Draw", "draw_group", "group_seed"]
