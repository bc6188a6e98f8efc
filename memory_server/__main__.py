"""`python -m memory_server ...`: the same command line as the `memory-server` script."""

import sys

from memory_server.cli import main

sys.exit(main())
