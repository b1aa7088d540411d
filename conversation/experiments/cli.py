"""``python -m conversation.experiments package ID --out DIR [--db URL] [--plan FILE]
[--no-scrub]`` and ``replicate DIR``: an experiment's replication package
(``conversation.replication``), written and re-run offline."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from conversation.exceptions import ConversationError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conversation.experiments")
    commands = parser.add_subparsers(dest="command", required=True)
    package = commands.add_parser("package", help="write an experiment's replication package")
    package.add_argument("experiment", type=int)
    package.add_argument("--db", default=None, help="database URL (default: the app's)")
    package.add_argument("--out", required=True, help="the package's folder (a zip beside it)")
    package.add_argument("--plan", default=None, help="an analysis plan (TOML or JSON)")
    package.add_argument("--no-scrub", action="store_true", help="keep personal data (recorded)")
    again = commands.add_parser("replicate", help="re-run a replication package offline")
    again.add_argument("folder")
    args = parser.parse_args(argv)
    from conversation.replication.cli import print_replication, replicate_folder

    try:
        if args.command == "replicate":
            return print_replication(replicate_folder(args.folder))
        import storage
        from conversation.replication.experiment import package_experiment, read_plan

        plan = read_plan(args.plan)
        with storage.Database(args.db or storage.database_url()) as db:
            written = package_experiment(
                db, args.experiment, args.out, plan=plan, scrub=not args.no_scrub
            )
    except ConversationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in written.lines():
        print(line)
    return 0


__all__ = ["main"]
