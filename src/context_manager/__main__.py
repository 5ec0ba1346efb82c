import sys

from context_manager.cli import main

if __name__ == "__main__":
    sys.exit(main())
