"""The runner: drives the rooms stored in a database, batched across rooms.

``Worker`` is the asyncio loop, ``BackgroundWorker`` the same loop on a thread (one per web-server
process), ``main`` the ``python -m conversation.worker`` command.
"""

from conversation.worker.cli import main
from conversation.worker.runner import BackgroundWorker, Worker

__all__ = ["BackgroundWorker", "Worker", "main"]
