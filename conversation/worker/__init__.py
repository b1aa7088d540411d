"""The runner: drives the rooms stored in a database, batched across rooms.

``Worker`` is the asyncio loop, ``BackgroundWorker`` the same loop on a thread (one per web-server
process, with an ``AnalysisRunner`` beside it asking the stored analyses' planned answers),
``main`` the ``python -m conversation.worker`` command, ``recovering`` what the pages say while a
restarted process takes over turns a crashed one left in flight, ``StudyClock`` the studies'
clock and ``ServiceBeat`` the participants' service's beat (``worker.studies``).
"""

from conversation.worker.analyses import AnalysisRunner
from conversation.worker.cli import main
from conversation.worker.recovery import Recovery, recovering
from conversation.worker.runner import BackgroundWorker, Worker
from conversation.worker.studies import ServiceBeat, StudyClock

__all__ = [
    "AnalysisRunner",
    "BackgroundWorker",
    "Recovery",
    "ServiceBeat",
    "StudyClock",
    "Worker",
    "main",
    "recovering",
]
