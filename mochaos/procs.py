"""Processes we started, identified by pid and command line (never by name)."""

from __future__ import annotations

import contextlib
import os
import signal
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


def executable_replaced(pid: int) -> bool:
    """True when the live process ``pid`` runs a program file that has since been replaced
    or removed on disk (a rebuilt binary): the kernel marks its ``exe`` link deleted."""
    try:
        return os.readlink(f"/proc/{pid}/exe").endswith(" (deleted)")
    except OSError:
        return False


def wait_gone(still_there: Callable[[], bool], seconds: float) -> bool:
    """Poll ``still_there`` until it is false (True) or ``seconds`` pass (False)."""
    deadline = time.monotonic() + seconds
    while still_there():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def stop_group(pid: int, argv: list[str], grace: float) -> bool:
    """SIGTERM the process group led by ``pid``, SIGKILL after ``grace`` seconds, only while
    ``pid`` runs ``argv`` (pids are reused). True when it was running and was signalled."""

    def runs() -> bool:
        return cmdline(pid) == argv

    if not runs():
        return False
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    if not wait_gone(runs, grace):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    return True
