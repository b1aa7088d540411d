"""The study CLI's replication commands: ``package CODE --db URL --out DIR [--no-scrub]`` and
``replicate DIR`` (``conversation.study.package`` and ``conversation.replication``, imported
when a command runs: the worker, which imports the study, never loads them)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

PACKAGE_COMMANDS = ("package", "replicate")


def add_package_commands(commands: Any) -> None:
    """Add ``package`` and ``replicate`` to the study CLI's sub-commands."""
    package = commands.add_parser("package", help="write a study's replication package")
    package.add_argument("code")
    package.add_argument("--db", default=None, help="database URL (default: the app's)")
    package.add_argument("--out", required=True, help="the package's folder (a zip beside it)")
    package.add_argument(
        "--no-scrub",
        action="store_true",
        help="keep personal data in transcripts and answers (recorded in the README)",
    )
    replicate = commands.add_parser("replicate", help="re-run a replication package offline")
    replicate.add_argument("folder")


def run_package_command(args: argparse.Namespace) -> int:
    """Run ``package`` or ``replicate``; the exit status (``replicate``: 0 when identical)."""
    from conversation.replication.cli import print_replication, replicate_folder

    if args.command == "replicate":
        return print_replication(replicate_folder(args.folder))
    import storage
    from conversation.study.package import package_study

    url = args.db or storage.database_url()
    with storage.Database(url) as db:
        written = package_study(db, args.code, args.out, scrub=not args.no_scrub)
    for line in written.lines():
        print(line, file=sys.stdout)
    return 0


__all__ = ["PACKAGE_COMMANDS", "add_package_commands", "run_package_command"]
