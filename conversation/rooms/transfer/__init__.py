"""Moving rooms in and out (docs/design.md, "Resuming a group chat"): ``reading`` (an import's
bytes, text or data, and a saved chat's messages, checked), ``importing`` (a message list or an
export written as a new room, in one transaction), ``exporting`` (a room as versioned JSON, export
files) and ``schema`` (the shapes at the door). What an import guarantees is in ``importing``.
"""

from conversation.exceptions import ImportRejected
from conversation.rooms.transfer.exporting import export_room, safe_export_path, write_export
from conversation.rooms.transfer.importing import import_room
from conversation.rooms.transfer.reading import ResumeWarning, parse_import
from conversation.rooms.transfer.schema import EXPORT_FORMAT, EXPORT_VERSION

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "ImportRejected",
    "ResumeWarning",
    "export_room",
    "import_room",
    "parse_import",
    "safe_export_path",
    "write_export",
]
