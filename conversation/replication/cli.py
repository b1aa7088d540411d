"""``python -m conversation.replication replicate DIR`` (and the study's and experiments'
``replicate``): run a package again, print every difference, end with the ``REPLICATED`` line;
exit status 0 when everything is identical, 1 otherwise."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from conversation.exceptions import ConversationError
from conversation.replication.replicate import Replication, replicate


def replicate_folder(folder: str | Path) -> Replication:
    return replicate(folder)


def print_replication(report: Replication) -> int:
    """Print the report (last line: ``REPLICATED ...``); 0 when everything was identical."""
    for line in report.lines():
        print(line)
    same = report.identical == len(report.rooms) and report.stats_identical and not report.files
    return 0 if same else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conversation.replication")
    commands = parser.add_subparsers(dest="command", required=True)
    again = commands.add_parser("replicate", help="re-run a replication package offline")
    again.add_argument("folder")
    args = parser.parse_args(argv)
    try:
        return print_replication(replicate_folder(args.folder))
    except ConversationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


__all__ = ["main", "print_replication", "replicate_folder"]
