import sys

from conversation.replication.cli import main

if __name__ == "__main__":
    sys.exit(main())
