"""The agent library's writes, checked against the actor's role (see ``profiles``)."""

from conversation.library.profiles import create_profile, delete_profile, update_profile

__all__ = ["create_profile", "delete_profile", "update_profile"]
