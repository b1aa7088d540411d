"""The engine's reads for an experiment's budget: the budget from the experiment's stored design
(trusted for ``BUDGET_TTL_SECONDS``) and what its other rooms spent, read before a plan (which
makes no storage call itself)."""

from __future__ import annotations

import time

import storage
from conversation.boundary import translated
from conversation.exceptions import NotFoundError
from conversation.rooms.config import RoomConfig
from conversation.rooms.engine.plan import Budgets
from conversation.rooms.engine.records import BUDGET_TTL_SECONDS, HeldRoom
from conversation.termination.budget import Budget, Spend


class ExperimentBudgets:
    """An engine's reads of experiments' budgets, each budget kept for ``BUDGET_TTL_SECONDS``."""

    def __init__(self, db: storage.Database) -> None:
        self.db = db
        self._known: dict[int, tuple[float, Budget | None]] = {}

    def budgets_of(self, room: storage.Room, held: HeldRoom, config: RoomConfig) -> Budgets:
        """What a plan of an experiment's room needs to know of the experiment's budget: read
        only when a new turn may be claimed and the experiment has a budget (its budget at most
        every ``BUDGET_TTL_SECONDS``; its other rooms' spend in one aggregate query, skipped
        when the room's own budget already stops it)."""
        room_log = held.log
        if room.experiment_id is None or room_log is None or room_log.open_turn is not None:
            return Budgets()
        budget = self.experiment_budget(room.experiment_id)
        if budget is None:
            return Budgets()
        if config.budget is not None and config.budget.reached(room_log.spent()) is not None:
            return Budgets(budget)
        others = storage.experiment_spend(self.db, room.experiment_id, excluding_room=held.room_id)
        return Budgets(budget, Spend(*others))

    def experiment_budget(self, experiment_id: int) -> Budget | None:
        """The experiment's budget from its stored design (``config["budget"]``, written by
        ``experiments.design.design``)."""
        now = time.monotonic()
        known = self._known.get(experiment_id)
        if known is not None and known[0] > now:
            return known[1]
        try:
            with translated():
                config = storage.get_experiment(self.db, experiment_id).config
        except NotFoundError:
            config = {}
        budget = Budget.from_dict((config or {}).get("budget"), field="experiment budget")
        self._known[experiment_id] = (now + BUDGET_TTL_SECONDS, budget)
        return budget


__all__ = ["ExperimentBudgets"]
