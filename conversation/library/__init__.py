"""The agent library: its agents and their rules (``drafts``), files of agents read through a
door schema and written as JSON or an EDSL AgentList (``agents_file``), and its writes, checked
against the actor's role (``profiles``).

A write storage refuses (a duplicate name, a secret in a trait) raises ``ConversationValueError``
naming the problem; a refused file raises ``AgentsFileRejected`` (a ``ConversationValueError``).
"""

from conversation.library.agents_file import (
    FORMAT,
    MAX_AGENTS,
    MAX_IMPORT_BYTES,
    VERSION,
    AgentsFileRejected,
    export_agent_list,
    export_json,
    read_agents_file,
)
from conversation.library.drafts import (
    AgentDraft,
    add_missing,
    check_name,
    traits_from_rows,
    unique_copy_name,
    validate,
)
from conversation.library.profiles import create_profile, delete_profile, update_profile

__all__ = [
    "FORMAT",
    "MAX_AGENTS",
    "MAX_IMPORT_BYTES",
    "VERSION",
    "AgentDraft",
    "AgentsFileRejected",
    "add_missing",
    "check_name",
    "create_profile",
    "delete_profile",
    "export_agent_list",
    "export_json",
    "read_agents_file",
    "traits_from_rows",
    "unique_copy_name",
    "update_profile",
    "validate",
]
