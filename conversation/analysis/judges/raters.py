"""Human coders as raters of the units judges score, so one ``agreement_table`` compares coders,
each judge and the panel.

A coder's tags (``coding``: a codebook label on a message, an optional rating) become ratings on
a message rubric's dimensions, rater ``"human:<coder>"``:

- a dimension whose levels are labels (nominal, or ordinal labels): the one label of those levels
  the coder put on the message. A message the coder tagged with two of them is left out (one
  rating per rater and unit), and counted in ``HumanRatings.ambiguous``. The rubric's one level
  that is not in the codebook (``Rubric.from_codebook(..., none_label="none")``), or
  ``none_label=``, is the value of the messages a coder left untagged in a room they coded.
- any other dimension (ordinal 1..k, interval, ratio): the rating of the coder's tag whose label
  is the dimension's name (or ``label=``), when the rating is on the scale.

Room rubrics have no human ratings (tags are on messages). No pandas here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conversation.analysis import coding
from conversation.analysis.judges.panel import PANEL, Score, load_rubric, scores
from conversation.analysis.judges.rubrics import Dimension, IntervalScale, OrdinalScale, Rubric
from conversation.analysis.judges.units import room_units

HUMAN = "human:"


@dataclass(frozen=True, slots=True)
class HumanRatings:
    """The coders' ratings of one dimension, and the messages left out as ambiguous."""

    dimension: str
    ratings: list[Score] = field(default_factory=list)
    ambiguous: list[tuple[str, str]] = field(default_factory=list)  # (unit, rater)

    @property
    def coders(self) -> list[str]:
        return sorted({s.rater for s in self.ratings})


def _labelled(dimension: Dimension) -> bool:
    scale = dimension.scale
    return not isinstance(scale, IntervalScale) and not (
        isinstance(scale, OrdinalScale) and scale.points
    )


def _none_label(db: Any, dimension: Dimension, room_ids: Sequence[int], given: str | None) -> Any:
    if given is not None or not room_ids:
        return given
    book = set(coding.codebook(db, room_id=room_ids[0]))
    outside = [level for level in dimension.scale.levels() if level not in book]
    return outside[0] if len(outside) == 1 else None


def human_ratings(
    db: Any,
    rubric: Rubric,
    room_ids: Sequence[int],
    dimension: str,
    *,
    label: str | None = None,
    none_label: str | None = None,
) -> HumanRatings:
    """The coders' tags of these rooms as ratings of ``dimension`` (see the module doc)."""
    wanted = rubric.dimension(dimension)
    if rubric.unit != "message":
        return HumanRatings(dimension)
    units = {u.event_id: u for u, _ in room_units(db, room_ids, "message")}
    tags = [t for t in coding.tags(db, room_ids=list(room_ids)) if t.event_id in units]
    if _labelled(wanted):
        return _label_ratings(db, wanted, room_ids, units, tags, none_label)
    name = label or wanted.name
    out = []
    for tag in tags:
        if tag.label == name and tag.rating is not None and wanted.contains(tag.rating):
            unit = units[tag.event_id]
            out.append(_score(unit, tag.by, dimension, wanted.parse(tag.rating)))
    return HumanRatings(dimension, out)


def _score(unit: Any, coder: str, dimension: str, value: Any) -> Score:
    return Score(unit.key, unit.room_id, unit.seq, unit.event_id, f"{HUMAN}{coder}", dimension, value)  # fmt: skip


def _label_ratings(
    db: Any,
    wanted: Dimension,
    room_ids: Sequence[int],
    units: dict[Any, Any],
    tags: list[Any],
    none_label: str | None,
) -> HumanRatings:
    levels = set(wanted.scale.levels())
    given: dict[tuple[int, str], set[str]] = {}
    coded: dict[str, set[int]] = {}
    for tag in tags:
        coded.setdefault(tag.by, set()).add(tag.room_id)
        if tag.label in levels:
            given.setdefault((tag.event_id, tag.by), set()).add(tag.label)
    nothing = _none_label(db, wanted, list(room_ids), none_label)
    out, ambiguous = [], []
    for event_id, unit in units.items():
        for coder, rooms in coded.items():
            found = given.get((event_id, coder), set())
            if len(found) > 1:
                ambiguous.append((unit.key, f"{HUMAN}{coder}"))
            elif found:
                out.append(_score(unit, coder, wanted.name, next(iter(found))))
            elif nothing is not None and unit.room_id in rooms:
                out.append(_score(unit, coder, wanted.name, nothing))
    return HumanRatings(wanted.name, out, ambiguous)


def ratings(
    db: Any,
    rubric_id: int,
    dimension: str,
    *,
    room_ids: Sequence[int] | None = None,
    humans: bool = True,
    panel: bool = True,
    combine: str | None = None,
    label: str | None = None,
    none_label: str | None = None,
) -> list[Score]:
    """Every rater's valid rating of ``dimension`` for a stored rubric version: each judge (but
    one that copies another's cached answers), the panel and (``humans``) each coder, on the
    units the judges scored (their rooms, or ``room_ids``). Rows for ``agreement.agreement_table``: ``(s.unit, s.rater, s.value)``."""
    stored = load_rubric(db, rubric_id)
    every = scores(db, rubric_id, room_ids=room_ids, panel=panel, combine=combine)
    judged = [
        s for s in every if s.dimension == dimension and s.value is not None and not s.copy_of
    ]  # a copy of another judge's cached answers is no rater of its own (``panel.copies``)
    out = [s for s in judged if s.rater != PANEL] + [s for s in judged if s.rater == PANEL]
    if humans:  # on every room the judges were asked about, failed scores included
        rooms = list(room_ids) if room_ids is not None else sorted({s.room_id for s in every})
        out += human_ratings(
            db, stored.rubric, rooms, dimension, label=label, none_label=none_label
        ).ratings
    return out


__all__ = ["HUMAN", "HumanRatings", "human_ratings", "ratings"]
