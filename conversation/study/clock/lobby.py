"""The lobby: a balanced randomisation of waiting people into groups, recorded.

:func:`draw_group` is pure: from the conditions (their human seats), how many groups each has,
the target per condition and the people waiting (in arrival order), it draws the next group.
Only people present now wait for a draw (``clock.ticks``: seen within the lobby's
``presence_seconds``). Among the conditions still short of the target whose seats the waiting
people can fill (with a ``composition``, only by people whose pre-survey answers meet it; or,
``fill``, any of them: the empty seats go to their stand-in agents), those with the fewest
groups so far are eligible (balance); one is drawn with ``random.Random(seed)``, where the seed
is derived from the study's master seed and the group's index. The earliest arrivals who fit
take the group; the same generator deals them the seats. Everything the draw used is returned
in ``assignment`` and stored with the group and each ``assigned`` event: :func:`replay_draw`
makes the same draw again from that record alone.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conversation.study.definition.composition import members
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
    compositions: Mapping[str, Mapping[str, Any]] | None = None,
    answers: Mapping[int, Mapping[str, Any]] | None = None,
) -> Draw | None:
    """The next group, or None when none can be formed now (see the module docstring).
    ``conditions``: ``(label, human seats)`` in design order; ``waiting``: participant ids in
    arrival order (the people present now); ``compositions``: each condition's composition
    rule (``definition.composition``; a condition without one takes anyone) and ``answers``:
    each waiting person's answers to their questions (``{question: answer}``)."""
    if not waiting:
        return None
    rules = dict(compositions or {})
    given = {int(k): v for k, v in (answers or {}).items()}
    open_ = [(label, seats) for label, seats in conditions if counts.get(label, 0) < target]
    fitting = []
    for label, seats in open_:
        people = members(rules.get(label), len(seats), waiting, given, fill=fill)
        if people is not None:
            fitting.append((label, seats, people))
    if not fitting:
        return None
    fewest = min(counts.get(label, 0) for label, _, _ in fitting)
    eligible = [f for f in fitting if counts.get(f[0], 0) == fewest]
    index = sum(counts.values()) + 1
    seed = group_seed(master_seed, index)
    rng = random.Random(seed)
    label, seats, people = eligible[rng.randrange(len(eligible))]
    dealt = rng.sample(list(seats), len(seats))
    holders: dict[str, int | str] = {seat: SeatHolder.AGENT for seat in seats}
    for seat, person in zip(dealt, people, strict=False):
        holders[seat] = person
    ordered = {seat: holders[seat] for seat in seats}  # the design's seat order
    record: dict[str, Any] = {
        "seed": seed,
        "master_seed": master_seed,
        "group_index": index,
        "eligible_conditions": [lbl for lbl, _, _ in eligible],
        "eligible_participants": list(waiting),
        "counts_before": dict(counts),
        "filled_with_agents": [s for s, p in ordered.items() if p == SeatHolder.AGENT],
        # What a replay needs besides the above (``replay_draw``).
        "target": target,
        "fill": fill,
        "conditions": [[lbl, list(s)] for lbl, s in conditions],
    }
    if rules:
        record["compositions"] = {k: dict(v) for k, v in rules.items()}
        record["answers"] = {str(p): given.get(p) for p in waiting}
    return Draw(condition=label, number=counts.get(label, 0) + 1, seats=ordered, assignment=record)


def replay_draw(assignment: Mapping[str, Any]) -> Draw | None:
    """The draw a group's recorded ``assignment`` describes, made again from the record alone
    (the eligible people with their answers, the composition rules, the seed and the counts):
    the same group, the same seats."""
    answers = {int(k): v for k, v in (assignment.get("answers") or {}).items()}
    return draw_group(
        [(str(label), list(seats)) for label, seats in assignment["conditions"]],
        assignment["counts_before"],
        int(assignment["target"]),
        [int(p) for p in assignment["eligible_participants"]],
        int(assignment["master_seed"]),
        fill=bool(assignment.get("fill")),
        compositions=assignment.get("compositions"),
        answers=answers,
    )


__all__ = ["Draw", "draw_group", "group_seed", "replay_draw"]
