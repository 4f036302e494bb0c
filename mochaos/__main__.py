"""Entry point for ``python -m mochaos``."""

import sys

from mochaos.cli import main

sys.exit(main())
