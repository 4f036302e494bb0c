"""The local cluster's supervisor: every process of the cluster that exits is started again.

One small process per cluster (``python -m mochaos.cluster.local.supervisor <cluster-dir>``),
started by ``LocalProvider.up()`` and stopped by ``down()``, found by its pid file and
command line, and started again by the next ``up()`` if it died. It watches every
process in the cluster's table (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok-controller and each environment double, each captured while it
ran): one that exits is started again exactly as it ran, after the back-off below,
and the restart is appended to the cluster's events file. Why a process of its own
rather than a thread of pytest: the cluster outlives pytest runs (it stays up for the
next run's warm start) and an apiserver outage between two runs must heal as well.

A component stopped on purpose (``stop_component``) is *held*: the supervisor leaves
it alone until ``start_component`` starts it again, or the process holding it dies.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tenacity import RetryCallState, wait_exponential

from mochaos.cluster import events
from mochaos.cluster.local import leases
from mochaos.cluster.local.processes import (
    ProcessSpec,
    find,
    last_line,
    read_pid,
    runs,
    spawn,
    write_pid,
)
from mochaos.procs import cmdline, wait_gone

# -- the restart policy: the one place it is declared ------------------------------------

RESTART_BACKOFF = wait_exponential(multiplier=0.25, max=30)
"""Delay before the n-th consecutive restart of one process: 0.25 s, 0.5 s, 1 s … 30 s."""
STABLE_AFTER = 60.0
"""A process that ran this long since its last restart starts over at the first delay."""
POLL = 0.2
"""How often every process is checked (seconds)."""

MODULE = "mochaos.cluster.local.supervisor"
FORMER_MODULES = ("mochaos.cluster.supervisor",)
"""Where this module stood before: a supervisor started under that name by an earlier
mo-chaos still supervises its cluster, and is recognised (kept, or stopped by ``down``)
rather than joined by a second one."""
KUBECONFIG_FILE = "kubeconfig.yaml"
"""Where kwokctl writes a cluster's kubeconfig, in the cluster's folder."""


def backoff(attempt: int) -> float:
    """Seconds to wait before the ``attempt``-th consecutive restart (see RESTART_BACKOFF)."""
    state = RetryCallState(None, None, (), {})  # type: ignore[arg-type]
    state.attempt_number = attempt
    return float(RESTART_BACKOFF(state))


# -- the files of one cluster's supervision ----------------------------------------------


class Supervision:
    """The supervision files of one cluster: the process table, pid files, holds, events."""

    def __init__(self, cluster_dir: Path) -> None:
        self.cluster_dir = cluster_dir
        self.folder = cluster_dir / "supervisor"
        self.table_file = self.folder / "table.json"
        self.pid_file = self.folder / "supervisor.pid"
        self.lock_file = self.folder / "supervisor.lock"
        self.log_file = cluster_dir / "logs" / "supervisor.log"
        self.events_file = cluster_dir / events.EVENTS_FILE

    # -- the table -------------------------------------------------------------------

    def table(self) -> list[ProcessSpec]:
        """Every supervised process, in start order ([] before the first ``set_table``)."""
        try:
            data = json.loads(self.table_file.read_text())
        except (OSError, ValueError):
            return []
        return [ProcessSpec.from_dict(p) for p in data.get("processes", [])]

    def set_table(self, specs: Sequence[ProcessSpec]) -> None:
        """Replace the table (readable by the user only: it holds the processes' env)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".table.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"processes": [s.to_dict() for s in specs]}, fh, indent=1)
        os.replace(tmp, self.table_file)

    def add(self, spec: ProcessSpec) -> None:
        """Add (or replace) one process in the table."""
        self.set_table([*(s for s in self.table() if s.name != spec.name), spec])

    def process_pid_file(self, name: str) -> Path:
        """The pid file of one supervised process (kwokctl's folder, for every process)."""
        return self.cluster_dir / "pids" / f"{name}.pid"

    # -- holds -------------------------------------------------------------------------

    def _hold_file(self, name: str) -> Path:
        return self.folder / "hold" / name

    def hold(self, name: str) -> None:
        """Keep the supervisor off ``name`` while this process stops and starts it."""
        path = self._hold_file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        me = os.getpid()
        path.write_text(json.dumps({"pid": me, "cmdline": cmdline(me)}))

    def release(self, name: str) -> None:
        """Let the supervisor watch ``name`` again."""
        self._hold_file(name).unlink(missing_ok=True)

    def held(self, name: str) -> bool:
        """True while a live process holds ``name`` (a dead holder's hold is dropped)."""
        path = self._hold_file(name)
        try:
            holder = json.loads(path.read_text())
        except (OSError, ValueError):
            return False
        if cmdline(int(holder.get("pid", 0))) == holder.get("cmdline"):
            return True
        path.unlink(missing_ok=True)
        return False

    # -- the supervisor process ----------------------------------------------------------

    def command(self) -> list[str]:
        """The supervisor's command line."""
        return [sys.executable, "-m", MODULE, str(self.cluster_dir)]

    def pid(self) -> int | None:
        """The running supervisor's pid (pid file and command line agree), else None."""
        pid = read_pid(self.pid_file)
        args = [str(self.cluster_dir)]
        if pid and cmdline(pid)[1:] in (["-m", m, *args] for m in (MODULE, *FORMER_MODULES)):
            return pid
        return None

    def ensure_running(self) -> tuple[int, bool]:
        """Start the supervisor unless it runs; (its pid, True when it was started now)."""
        pid = self.pid()
        if pid is not None:
            return pid, False
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as out:
            proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
            )
        write_pid(self.pid_file, proc.pid)
        return proc.pid, True

    def stop(self, grace: float = 5.0) -> None:
        """Stop the supervisor (SIGTERM, then SIGKILL); the cluster's processes keep running."""
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        if not wait_gone(lambda: self.pid() == pid, grace):
            os.kill(pid, signal.SIGKILL)
            wait_gone(lambda: self.pid() == pid, grace)
        self.pid_file.unlink(missing_ok=True)


# -- the supervisor's loop ------------------------------------------------------------------


@dataclass
class _Watch:
    """What the supervisor knows about one process."""

    attempt: int = 0
    started: float | None = None
    due: float | None = None
    old_pid: int | None = None
    exit: str = ""
    reason: str = ""
    delay: float = 0.0
    waiting_since: float | None = None


def _say(line: str) -> None:
    print(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%S.%fZ} {line}", flush=True)


def describe_exit(returncode: int | None) -> str:
    """``exit status N`` / ``killed by SIGX`` / unknown (not our child: no status to read)."""
    if returncode is None:
        return "exited (status unknown: it was not started by the supervisor)"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


class Supervisor:
    """Checks every process of the table each :data:`POLL` seconds; see the module docstring."""

    def __init__(self, supervision: Supervision) -> None:
        self.sup = supervision
        self._watch: dict[str, _Watch] = {}
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def run(self, stop: threading.Event) -> None:
        """Supervise until ``stop`` is set or the cluster's folder is removed."""
        _say(f"supervising {self.sup.cluster_dir}")
        while not stop.wait(POLL):
            if not self.sup.cluster_dir.is_dir():
                _say("cluster folder removed; stopping")
                return
            self.tick()

    def tick(self) -> None:
        """Check every process once."""
        for spec in self.sup.table():
            self._check(spec, self._watch.setdefault(spec.name, _Watch()))

    def _check(self, spec: ProcessSpec, w: _Watch) -> None:
        now = time.monotonic()
        if self.sup.held(spec.name):
            w.due = None
            return
        pid_file = self.sup.process_pid_file(spec.name)
        pid = read_pid(pid_file)
        if runs(pid, spec):
            if w.started is not None and now - w.started >= STABLE_AFTER:
                w.attempt, w.started = 0, None
            w.due = None
            return
        if w.due is None:
            self._found_dead(spec, w, pid, now)
            return
        if now >= w.due:
            self._restart(spec, w, pid_file, now)

    def _found_dead(self, spec: ProcessSpec, w: _Watch, pid: int | None, now: float) -> None:
        running = find(spec)
        if running:  # started by someone else (or by us, just before a crash): adopt it
            write_pid(self.sup.process_pid_file(spec.name), running[0])
            _say(f"{spec.name}: adopted pid {running[0]}")
            return
        child = self._children.pop(pid, None) if pid else None
        w.old_pid = pid
        w.exit = describe_exit(child.wait() if child is not None else None)
        w.reason = last_line(Path(spec.log))
        w.attempt += 1
        w.delay = backoff(w.attempt)
        w.due = now + w.delay
        _say(f"{spec.name} (pid {pid}) {w.exit}; restart #{w.attempt} in {w.delay:.2f}s")

    def _restart(self, spec: ProcessSpec, w: _Watch, pid_file: Path, now: float) -> None:
        if spec.name in leases.HELD_BY and not self._leases_released(spec, w, now):
            return
        try:
            proc = spawn(spec)
        except OSError as err:
            self._event(spec, w, "restart-failed", None, extra=f"; start failed: {err}")
            w.attempt += 1
            w.delay = backoff(w.attempt)
            w.due = now + w.delay
            _say(f"{spec.name}: could not start ({err}); attempt #{w.attempt} in {w.delay:.2f}s")
            return
        write_pid(pid_file, proc.pid)
        self._children[proc.pid] = proc
        w.started, w.due = now, None
        self._event(spec, w, "restarted", proc.pid)
        _say(f"{spec.name}: restarted as pid {proc.pid}")

    def _leases_released(self, spec: ProcessSpec, w: _Watch, now: float) -> bool:
        """Release the leases the dead process held (see :mod:`mochaos.cluster.local.leases`);
        while the API does not answer, put the restart off by a second, for at most
        RELEASE_WAIT seconds. True: start it now."""
        n = leases.try_release(self.sup.cluster_dir / KUBECONFIG_FILE, spec.name)
        if n is None:
            w.waiting_since = w.waiting_since if w.waiting_since is not None else now
            if now - w.waiting_since < leases.RELEASE_WAIT:
                w.due = now + 1.0
                return False
            _say(f"{spec.name}: leases not released (API not answering); taken on expiry")
        else:
            _say(f"{spec.name}: released {n} lease(s) of its predecessor")
        w.waiting_since = None
        return True

    def _event(
        self, spec: ProcessSpec, w: _Watch, kind: str, new_pid: int | None, extra: str = ""
    ) -> None:
        events.append(
            self.sup.events_file,
            events.ClusterEvent(
                t=time.time(), component=spec.name, event=kind, old_pid=w.old_pid,
                new_pid=new_pid, exit=w.exit + extra, reason=w.reason, attempt=w.attempt,
                delay=round(w.delay, 3),
            ),
        )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mochaos.cluster.local.supervisor <cluster-dir>``: supervise until SIGTERM."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: python -m {MODULE} <cluster-dir>", file=sys.stderr)
        return 2
    sup = Supervision(Path(args[0]))
    sup.folder.mkdir(parents=True, exist_ok=True)
    lock = sup.lock_file.open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        _say(f"another supervisor already runs for {sup.cluster_dir}; exiting")
        return 0
    write_pid(sup.pid_file, os.getpid())  # the lock's holder is the supervisor, whoever won
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    Supervisor(sup).run(stop)
    _say("stopped")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
