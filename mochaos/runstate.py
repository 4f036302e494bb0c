"""Crash safety: a state file per process listing what it started, for the reaper.

Every process and container mo-chaos starts (operator targets) and every namespace
it creates is written to ``<state>/runs/<pid>.json`` while it lives. If pytest is
killed with SIGKILL, the file stays behind; the next run finds files whose owner is
dead and stops their processes (by pid, after checking its start time and command line
still match: a wrapper such as ``unshare`` may have exec'd the program it runs), removes
their containers (by id) and deletes their namespaces. The reaper
crosses each item off the file as it is done, so a reaper killed in turn leaves the
rest to the next one; a namespace that could not be deleted because the apiserver did
not answer stays listed for the next run (at most :data:`REAP_ATTEMPTS` times). What
had to be cleaned up by force goes into the killed test's ``result.json`` findings when
the file names its folder.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

from mochaos.errors import InfraError, UsageError
from mochaos.paths import state_dir
from mochaos.procs import cmdline, runs, start_time, wait_gone
from mochaos.tooling.docker_cli import DockerCli

_LOCK = threading.Lock()
REAP_ATTEMPTS = 5
"""Runs that try to delete a stale namespace on an unanswering apiserver before giving up."""
REAP_LOCK_TIMEOUT = 600.0
"""Seconds to wait for another session's reaper (xdist workers start together)."""

DeleteNamespace = Callable[[str, Path, str | None], list[str] | None]
"""Deletes one stale namespace (namespace, kubeconfig, context); returns the findings."""
RecordResult = Callable[[Path, dict[str, Any] | None, list[str]], None]
"""Writes the result of the killed test that made the namespace (report folder, its result
as kept, or None when it had none yet; the teardown's findings)."""


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
        data.setdefault("containers", {})
        data.setdefault("namespaces", {})
        change(data)
        if _pending(data):
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1))
            tmp.replace(path)
        else:
            path.unlink(missing_ok=True)


def register_pid(pid: int, command: list[str]) -> None:
    """Remember a process we started with ``command``, and its start time (until
    :func:`unregister_pid`)."""
    entry = {"argv": command, "started": start_time(pid)}
    _update(lambda d: d["pids"].__setitem__(str(pid), entry))


def unregister_pid(pid: int) -> None:
    """Forget a process we stopped."""
    _update(lambda d: d["pids"].pop(str(pid), None))


def register_container(cid: str, engine: str | None) -> None:
    """Remember a container we started, and the engine it runs on (``DOCKER_HOST``; None:
    the default), until :func:`unregister_container`."""
    _update(lambda d: d["containers"].__setitem__(cid, {"engine": engine}))


def unregister_container(cid: str) -> None:
    """Forget a container we removed."""
    _update(lambda d: d["containers"].pop(cid, None))


def _pending(data: dict[str, Any]) -> bool:
    return bool(data.get("pids") or data.get("containers") or data.get("namespaces"))


def register_namespace(
    namespace: str, kubeconfig: Path, context: str | None = None, *, report: Path | None = None
) -> None:
    """Remember a namespace we created, where, and the folder of the test it serves (whose
    result gets the findings if the reaper has to finish its teardown), until
    :func:`unregister_namespace`."""
    where = {"kubeconfig": str(kubeconfig), "context": context}
    if report is not None:
        where["report"] = str(report)
    _update(lambda d: d["namespaces"].__setitem__(namespace, where))


def keep_result(namespace: str, result: dict[str, Any]) -> None:
    """Keep a test's result with its namespace's record, for the reaper to write if the
    test is killed before it does."""

    def keep(data: dict[str, Any]) -> None:
        if namespace in data["namespaces"]:
            data["namespaces"][namespace]["result"] = result

    _update(keep)


def unregister_namespace(namespace: str) -> None:
    """Forget a namespace we deleted."""
    _update(lambda d: d["namespaces"].pop(namespace, None))


def _owner_alive(data: dict[str, Any]) -> bool:
    owner = int(data.get("owner", 0))
    return owner > 0 and cmdline(owner) == data.get("owner_cmdline")


def _save(path: Path, data: dict[str, Any]) -> None:
    """Rewrite a dead run's file with what is left to do (removed when nothing is)."""
    if _pending(data):
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
    else:
        path.unlink(missing_ok=True)


def reap(delete_namespace: DeleteNamespace, record_result: RecordResult | None = None) -> list[str]:
    """Clean up after dead runs; return one line per thing reaped.

    ``delete_namespace(namespace, kubeconfig, context)`` deletes one stale namespace and
    returns what it had to force (finalizers released); ``record_result(folder, result,
    lines)`` writes the killed test's result with those as findings, when its folder is on
    record. One reaper at a time: another session's waits for it, then finds nothing left.
    """
    done: list[str] = []
    with FileLock(str(_runs_dir() / ".reap.lock"), timeout=REAP_LOCK_TIMEOUT):
        for path in sorted(_runs_dir().glob("*.json")):
            data = _read(path)
            if not data or _owner_alive(data):
                continue
            _reap_processes(path, data, done)
            _reap_containers(path, data, done)
            _reap_namespaces(path, data, done, delete_namespace, record_result)
    return done


def _reap_processes(path: Path, data: dict[str, Any], done: list[str]) -> None:
    for pid_s, entry in list(data.get("pids", {}).items()):
        pid = int(pid_s)
        # A list is the command alone (a file of an older mo-chaos).
        legacy = isinstance(entry, list)
        command, started = (entry, None) if legacy else (entry["argv"], entry.get("started"))
        if runs(pid, command, started):
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
            wait_gone(lambda pid=pid, c=command, s=started: runs(pid, c, s), 5.0)
            done.append(f"stopped stale process {pid} ({' '.join(command[:4])})")
        del data["pids"][pid_s]
        _save(path, data)


def _reap_containers(path: Path, data: dict[str, Any], done: list[str]) -> None:
    for cid, where in list(data.get("containers", {}).items()):
        try:
            DockerCli(engine=where.get("engine")).remove(cid)
        except InfraError as err:
            done.append(f"could not remove stale container {cid[:12]}: {err}")
        else:
            done.append(f"removed stale container {cid[:12]}")
        del data["containers"][cid]
        _save(path, data)


def _reap_namespaces(
    path: Path,
    data: dict[str, Any],
    done: list[str],
    delete_namespace: DeleteNamespace,
    record_result: RecordResult | None,
) -> None:
    for namespace, where in list(data.get("namespaces", {}).items()):
        try:
            findings = delete_namespace(namespace, Path(where["kubeconfig"]), where.get("context"))
        except UsageError as err:  # the cluster is gone, or the namespace is not ours
            done.append(f"could not delete stale namespace {namespace}: {err}")
        except Exception as err:  # the apiserver did not answer: try again next run
            tries = int(where.get("attempts", 0)) + 1
            if tries < REAP_ATTEMPTS:
                where["attempts"] = tries
                _save(path, data)
                done.append(f"could not delete stale namespace {namespace} yet ({err}); "
                            f"the next run tries again")  # fmt: skip
                continue
            done.append(f"gave up on stale namespace {namespace} after {tries} runs: {err}")
        else:
            lines = [str(f) for f in findings or ()]
            done.append(f"deleted stale namespace {namespace}")
            done += [f"  {line}" for line in lines]
            if where.get("report") and record_result is not None:
                record_result(Path(where["report"]), where.get("result"), lines)
        del data["namespaces"][namespace]
        _save(path, data)
