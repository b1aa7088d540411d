"""Replication packages (issue 34): a study's or an experiment's rooms, model cache, scrubbed
transcripts and analysis written as a folder (and a zip) shaped after the AEA/DCAS replication
package, and ``replicate``: every agent-only room re-run offline from the package's cache,
every room with people replayed from its stored human messages, the analysis computed again,
every difference listed.
"""

from conversation.replication.plan import ExclusionIn, PlanIn, StatisticIn, plan_place

__all__ = ["ExclusionIn", "PlanIn", "StatisticIn", "plan_place"]
