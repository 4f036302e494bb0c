"""What runs for a local cluster outside its process table, and must stop with it.

A real operator's webhook host (:mod:`mochaos.operator.webhooks.host`) serves every test
namespace of a cluster for as long as a pytest process uses it, on a port that is the
machine's. A pytest process killed midway leaves it running for the next run to join; but
``cluster down`` (or a recreation) removes the cluster's folder and, with it, the only
record of the host, which would then hold the port until someone finds it by hand.
Whoever starts such a thing attaches it here (one JSON file per thing under
``<cluster>/attached/``); :meth:`LocalProvider.down` stops everything attached before it
removes the folder. A process is signalled only while its pid is still the process
recorded — start time and command line (pids are reused); anything else is stopped by the
command recorded with it (e.g. ``docker rm --force <id>``).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from mochaos.procs import stop_group
from mochaos.progress import announce

FOLDER = "attached"
STOP_GRACE = 10.0
"""Seconds between SIGTERM to an attached process group and SIGKILL."""
STOP_COMMAND_TIMEOUT = 60.0


@dataclass(frozen=True)
class Attached:
    """One thing to stop with the cluster: a process group (``pid``, its ``argv`` and start
    time) or a ``stop`` command (run with ``env`` added to ours)."""

    name: str
    pid: int | None = None
    argv: list[str] | None = None
    started: int | None = None
    stop: list[str] | None = None
    env: dict[str, str] | None = None


def _file(cluster_dir: Path, name: str) -> Path:
    return cluster_dir / FOLDER / f"{name}.json"


def attach(cluster_dir: Path, item: Attached) -> None:
    """Record ``item`` (replacing one of the same name)."""
    path = _file(cluster_dir, item.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(item)))
    tmp.replace(path)


def detach(cluster_dir: Path, name: str) -> None:
    """Forget ``name`` (it was stopped by whoever started it)."""
    _file(cluster_dir, name).unlink(missing_ok=True)


def attached(cluster_dir: Path) -> list[Attached]:
    """Everything attached to the cluster (unreadable records skipped)."""
    out = []
    for path in sorted((cluster_dir / FOLDER).glob("*.json")):
        try:
            out.append(Attached(**json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            continue
    return out


def stop(item: Attached, *, grace: float = STOP_GRACE) -> bool:
    """Stop one attached thing; True when something was running and was told to stop."""
    if item.pid is not None and item.argv is not None:
        return stop_group(item.pid, item.argv, grace, started=item.started)
    if item.stop:
        try:
            subprocess.run(
                item.stop, env={**os.environ, **(item.env or {})}, capture_output=True,
                timeout=STOP_COMMAND_TIMEOUT, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as err:
            announce(f"{item.name}: `{' '.join(item.stop)}` failed ({err}); stop it by hand")
            return False
        return True
    return False


def stop_all(cluster_dir: Path) -> list[str]:
    """Stop everything attached to the cluster and forget it; the names that ran."""
    stopped = []
    for item in attached(cluster_dir):
        if stop(item):
            announce(f"stopped {item.name}, left running for cluster {cluster_dir.name}")
            stopped.append(item.name)
        detach(cluster_dir, item.name)
    return stopped
