"""The agent library: its writes, checked against the actor's role (see ``profiles``).

A write storage refuses (a duplicate name, a secret in a trait) raises ``StorageValueError``
(a ``ValueError``), storage's own error passed through unchanged; the pages catch it from here.
"""

from conversation.library.profiles import create_profile, delete_profile, update_profile
from storage.errors import StorageValueError

__all__ = ["StorageValueError", "create_profile", "delete_profile", "update_profile"]
