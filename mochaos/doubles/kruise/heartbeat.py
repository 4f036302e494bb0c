"""The double's heartbeat: a small JSON file the running double rewrites every
:data:`INTERVAL` seconds in its state folder, and the check that reads it (the provider's
health probe). The folder lives under the cluster's state: when it disappears (``cluster
down`` removed the cluster), the double stops by itself instead of outliving its cluster.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mochaos.procs import cmdline

FILE = "heartbeat.json"
INTERVAL = 1.0
STALE_AFTER = 10.0


def heartbeat_path(state_dir: Path) -> Path:
    """Where the double in ``state_dir`` writes its heartbeat."""
    return Path(state_dir) / FILE


def beat(path: Path, *, synced: bool, errors: int) -> None:
    """Write one heartbeat atomically (write then rename) into an existing folder."""
    tmp = path.with_suffix(".tmp")
    record = {"pid": os.getpid(), "time": time.time(), "synced": synced, "errors": errors}
    tmp.write_text(json.dumps(record))
    tmp.replace(path)


def keep_beating(
    path: Path, state: Callable[[], tuple[bool, int]], stop: threading.Event
) -> threading.Thread:
    """A daemon thread writing ``state()`` = (synced, errors) every INTERVAL until ``stop``;
    it sets ``stop`` itself when the heartbeat's folder is gone."""

    def run() -> None:
        while not stop.is_set():
            if not path.parent.is_dir():
                stop.set()
                return
            synced, errors = state()
            try:
                beat(path, synced=synced, errors=errors)
            except FileNotFoundError:  # the folder vanished between the check and the write
                continue
            stop.wait(INTERVAL)

    thread = threading.Thread(target=run, name="heartbeat", daemon=True)
    thread.start()
    return thread


MODULE = "mochaos.doubles.kruise"


def is_double(pid: int) -> bool:
    """Whether ``pid`` is a live kruise double (checked by its command line)."""
    return MODULE in cmdline(pid)


def check(
    path: Path, *, now: float | None = None, alive: Callable[[int], bool] = is_double
) -> str | None:
    """None when the writer of the heartbeat is alive, the heartbeat fresh and the caches
    synced, else one line saying what is wrong."""
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return f"kruise double has not started yet (no {path})"
    except ValueError:
        return f"kruise double heartbeat {path} is unreadable"
    pid = int(record.get("pid", 0))
    if not alive(pid):
        return f"kruise double (pid {pid}) is not running (see its log)"
    age = (now if now is not None else time.time()) - float(record.get("time", 0))
    if age > STALE_AFTER:
        return f"kruise double silent for {age:.0f}s (pid {record.get('pid')}; see its log)"
    if not record.get("synced"):
        return "kruise double is still listing the cluster (caches not synced)"
    return None
