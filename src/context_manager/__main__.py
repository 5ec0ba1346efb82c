import sys

from context_manager.cli import main

sys.exit(main())
