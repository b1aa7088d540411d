"""Entry point of ``python -m conversation.worker`` (see ``conversation.worker.cli``)."""

from conversation.worker.cli import main

raise SystemExit(main())
