"""Progress lines of mo-chaos on the terminal (stderr), and the callable type that takes them."""

from __future__ import annotations

import sys
from collections.abc import Callable

Progress = Callable[[str], None]


def say(line: str) -> None:
    """Print one progress line of mo-chaos to stderr."""
    print(f"mo-chaos: {line}", file=sys.stderr, flush=True)
