"""Processes we started, identified by pid and command line (never by name)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def cmdline(pid: int) -> list[str]:
    """The command line of a live process; empty when it is gone (or not ours to read)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def wait_gone(still_there: Callable[[], bool], seconds: float) -> bool:
    """Poll ``still_there`` until it is false (True) or ``seconds`` pass (False)."""
    deadline = time.monotonic() + seconds
    while still_there():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True
