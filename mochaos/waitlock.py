"""A file lock that says when it waits: a line at once, then one per heartbeat.

Workers that arrive while another process builds the manager or starts the webhook host
wait minutes on a lock; without a line they look hung. Waiting past the timeout is the
caller's error (an exception type of its choosing, one line).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from mochaos.errors import MochaosError
from mochaos.progress import announce

HEARTBEAT = 30.0
"""Seconds between two "still waiting" lines."""


@contextlib.contextmanager
def holding(
    path: Path, *, waiting: str, timeout: float, too_long: Callable[[], MochaosError]
) -> Iterator[None]:
    """Hold the lock file ``path``; while another process holds it, announce ``waiting`` at
    once and every :data:`HEARTBEAT` seconds; raise ``too_long()`` after ``timeout``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    t0 = time.monotonic()
    try:
        lock.acquire(timeout=0)
    except Timeout:
        announce(waiting)
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                raise too_long() from None
            try:
                lock.acquire(timeout=min(HEARTBEAT, left))
                break
            except Timeout:
                announce(f"  … still {waiting}: {time.monotonic() - t0:.0f}s")
    try:
        yield
    finally:
        lock.release()
