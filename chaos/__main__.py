"""Entry point for ``python -m chaos``."""

import sys

from chaos.cli import main

sys.exit(main())
