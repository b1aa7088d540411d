"""Experiments: a template room x conditions x replicates, turned into rooms the runner drives.

``design`` plans (pure data, validated whole); ``runs`` writes and follows them in the database.
"""

from conversation.experiments.design import *  # noqa: F403
from conversation.experiments.design import __all__ as _design
from conversation.experiments.manage import *  # noqa: F403
from conversation.experiments.manage import __all__ as _manage
from conversation.experiments.runs import *  # noqa: F403
from conversation.experiments.runs import __all__ as _runs

__all__ = [*_design, *_runs, *_manage]
