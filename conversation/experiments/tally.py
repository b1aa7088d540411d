"""How far an experiment got: its rooms counted by status and what they spent.

Read with a few indexed counts and one aggregate (no pandas: the worker marks experiments done
with it, and a worker process never loads a dataframe library). A page that also shows each
room's numbers reads the rooms' frame through ``conversation.reading``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import storage
from conversation.experiments.design import FINISHED, experiment_budget, planned_rooms
from conversation.termination.budget import Budget, Spend
from conversation.vocabulary import ExperimentStatus, RoomStatus


@dataclass(frozen=True, slots=True)
class Progress:
    planned: int
    created: int
    finished: int
    running: int
    #: Rooms by status (only the statuses some room has).
    by_status: dict[str, int]
    #: The experiment's budget (None: none) and what its rooms spent (tokens, known dollars).
    budget: Budget | None = None
    spent: Spend = Spend()

    @property
    def fraction(self) -> float:
        return self.finished / self.planned if self.planned else 1.0

    @property
    def cost(self) -> float:
        """US dollars the experiment's rooms spent (known prices only; ``spent.unpriced`` calls
        of unknown price are not in it)."""
        return self.spent.dollars

    @property
    def cost_text(self) -> str:
        """The cost as a person reads it: ``$0.42 + 3 calls of unknown price``."""
        return self.spent.cost_text


def progress(db: Any, experiment_id: int, *, spend: bool = True) -> Progress:
    """How far an experiment got, from its rooms' statuses (one grouped count) and, with
    ``spend`` (default), what they spent (one aggregate over their events: left out where only
    the counts matter, as when a worker checks whether an experiment is done)."""
    experiment = storage.get_experiment(db, experiment_id)
    counts = storage.experiment_status_counts(db, experiment_id)
    return Progress(
        planned=len(planned_rooms(experiment.config)),
        created=sum(counts.values()),
        finished=sum(n for s, n in counts.items() if s in FINISHED),
        running=counts.get(RoomStatus.RUNNING, 0),
        by_status=counts,
        budget=experiment_budget(experiment.config),
        spent=Spend(*storage.experiment_spend(db, experiment_id)) if spend else Spend(),
    )


def mark_done_if_finished(db: Any, experiment_id: int, current: Progress) -> bool:
    """Record ``done`` once every planned room finished (only from ``running``)."""
    if current.created >= current.planned and current.finished >= current.planned:
        return (
            storage.update_experiment(
                db,
                experiment_id,
                status=ExperimentStatus.DONE,
                expected_status=ExperimentStatus.RUNNING,
            )
            is not None
        )
    return False


__all__ = ["Progress", "mark_done_if_finished", "progress"]
