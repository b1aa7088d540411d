"""``python -m conversation.study``: see :mod:`conversation.study.cli`."""

import sys

from conversation.study.cli import main

sys.exit(main())
