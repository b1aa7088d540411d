import sys

from conversation.experiments.cli import main

if __name__ == "__main__":
    sys.exit(main())
