"""The runner: drives the rooms stored in a database, batched across rooms.

``Worker`` is the asyncio loop, ``BackgroundWorker`` the same loop on a thread (one per web-server
process), ``main`` the ``python -m conversation.worker`` command, ``recovering`` what the pages
say while a restarted process takes over turns a crashed one left in flight.
"""

from conversation.worker.cli import main
from conversation.worker.recovery import Recovery, recovering
from conversation.worker.runner import BackgroundWorker, Worker

__all__ = ["BackgroundWorker", "Recovery", "Worker", "main", "recovering"]
