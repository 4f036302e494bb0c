"""Crash safety: a state file per process listing what it started, for the reaper.

Every process mo-chaos starts (operator targets) and every namespace it creates
is written to ``<state>/runs/<pid>.json`` while it lives. If pytest is killed
with SIGKILL, the file stays behind; the next run finds files whose owner is
dead and stops their processes (by pid, after checking the command line still
matches) and deletes their namespaces.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mochaos.paths import state_dir
from mochaos.procs import cmdline, wait_gone

_LOCK = threading.Lock()


def _runs_dir() -> Path:
    path = state_dir() / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _own_file() -> Path:
    return _runs_dir() / f"{os.getpid()}.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def _update(change: Callable[[dict[str, Any]], None]) -> None:
    with _LOCK:
        path = _own_file()
        data = _read(path) or {"owner": os.getpid(), "owner_cmdline": cmdline(os.getpid())}
        data.setdefault("pids", {})
        data.setdefault("namespaces", {})
        change(data)
        if data["pids"] or data["namespaces"]:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1))
            tmp.replace(path)
        else:
            path.unlink(missing_ok=True)


def register_pid(pid: int, command: list[str]) -> None:
    """Remember a process we started (until :func:`unregister_pid`)."""
    _update(lambda d: d["pids"].__setitem__(str(pid), command))


def unregister_pid(pid: int) -> None:
    """Forget a process we stopped."""
    _update(lambda d: d["pids"].pop(str(pid), None))


def register_namespace(namespace: str, kubeconfig: Path, context: str | None = None) -> None:
    """Remember a namespace we created, and where (until :func:`unregister_namespace`)."""
    where = {"kubeconfig": str(kubeconfig), "context": context}
    _update(lambda d: d["namespaces"].__setitem__(namespace, where))


def unregister_namespace(namespace: str) -> None:
    """Forget a namespace we deleted."""
    _update(lambda d: d["namespaces"].pop(namespace, None))


def _owner_alive(data: dict[str, Any]) -> bool:
    owner = int(data.get("owner", 0))
    return owner > 0 and cmdline(owner) == data.get("owner_cmdline")


def reap(delete_namespace: Callable[[str, Path, str | None], None]) -> list[str]:
    """Clean up after dead runs; return one line per thing reaped.

    ``delete_namespace(namespace, kubeconfig, context)`` deletes one stale namespace.
    """
    done: list[str] = []
    for path in sorted(_runs_dir().glob("*.json")):
        data = _read(path)
        if not data or _owner_alive(data):
            continue
        for pid_s, command in data.get("pids", {}).items():
            pid = int(pid_s)
            if cmdline(pid) == command:
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
                wait_gone(lambda pid=pid: bool(cmdline(pid)), 5.0)
                done.append(f"stopped stale process {pid} ({' '.join(command[:4])})")
        for namespace, where in data.get("namespaces", {}).items():
            try:
                delete_namespace(namespace, Path(where["kubeconfig"]), where.get("context"))
                done.append(f"deleted stale namespace {namespace}")
            except Exception as err:  # a gone cluster is fine: nothing left to reap
                done.append(f"could not delete stale namespace {namespace}: {err}")
        path.unlink(missing_ok=True)
    return done
