"""Which processes use a local cluster: a shared lock each holds for its life.

Every process that gets the cluster from :meth:`LocalProvider.up` (a pytest session, each
xdist worker) holds ``<cluster>/in-use.lock`` shared until it exits — the kernel drops the
lock of a killed process too. Whoever must change what every run relies on (the sweep
between ``qualify`` targets removes CRDs and webhook configurations) takes it exclusive,
without waiting: when it cannot, someone else uses the cluster and nothing is touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from mochaos.errors import InfraError
from mochaos.procs import holders
from mochaos.progress import announce

LOCK_FILE = "in-use.lock"
SHARE_TIMEOUT = 600.0
"""Seconds a new user waits for an exclusive holder (a sweep takes seconds)."""
_held: dict[Path, int] = {}
"""Shared locks this process holds, by cluster folder (kept open until it exits)."""


def _open(cluster_dir: Path) -> int:
    cluster_dir.mkdir(parents=True, exist_ok=True)
    return os.open(cluster_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def share(cluster_dir: Path) -> None:
    """Hold the cluster's lock shared for the rest of this process's life (idempotent);
    waits, with a line, while a sweep holds it exclusive."""
    if cluster_dir in _held:
        return
    fd = _open(cluster_dir)
    deadline = time.monotonic() + SHARE_TIMEOUT
    said = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise InfraError(
                    f"cluster {cluster_dir.name} was held exclusively for over "
                    f"{SHARE_TIMEOUT:.0f}s", hint=f"see who holds {cluster_dir / LOCK_FILE}",
                ) from None  # fmt: skip
            if not said:
                announce(f"waiting for the sweep of cluster {cluster_dir.name} to end")
                said = True
            time.sleep(0.2)
    _held[cluster_dir] = fd


@contextlib.contextmanager
def exclusive(cluster_dir: Path) -> Iterator[list[int] | None]:
    """Hold the cluster's lock exclusive if nobody else uses it: yields None then, else the
    pids of the processes seen using it (and nothing is held)."""
    fd = _open(cluster_dir)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            me = os.getpid()
            yield [p for p in holders(cluster_dir / LOCK_FILE) if p != me]
            return
        yield None
    finally:
        os.close(fd)
