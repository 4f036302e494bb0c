"""The webhook host's life: joined, started, replaced and stopped in one place, under one lock.

One manager per cluster serves the operator's webhooks (:mod:`mochaos.operator.webhooks.admission`)
for every pytest process using that cluster and operator build. Its folder holds the
lock, ``host.json`` (how to find the host: pid, command line and start time, or a
container id; and the build) and ``users/`` (one file per pytest process using it, with
its start time). Under the lock: a process of the same build joins a running host — no
port check, the host was recorded only once it served; otherwise a host of another build
nobody uses (a previous qualify target, a killed run) is stopped first, then the port is
checked and a new host started. The last user stops the host and waits until it is gone
and the port free; the record is removed only then, so a host never outlives its record.
A host of this cluster found listening without a record (left by an older mo-chaos) is
stopped by pid, after checking its command line names this cluster's folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock, Timeout

from mochaos.cluster.local import attached
from mochaos.cluster.local.attached import Attached
from mochaos.errors import InfraError, UsageError
from mochaos.kube import Cluster
from mochaos.operator.runtime.operator_container import ContainerHost
from mochaos.operator.webhooks.admission import CERT_FLAG, PORT, unregister
from mochaos.procs import (
    Started,
    cmdline,
    listeners,
    port_in_use,
    start_time,
    stop_group,
    wait_gone,
)
from mochaos.progress import announce
from mochaos.waitlock import holding

HOST_NAME = "operator-webhook-host"
"""The webhook host's name among the things attached to its cluster."""
STOP_GRACE = 10.0
"""Seconds between SIGTERM to the host and SIGKILL."""
PORT_FREE_TIMEOUT = 15.0
"""Seconds a stopped host's port may take to be free again."""
LOCK_TIMEOUT = 900.0
"""Seconds to wait for another process's start or stop of the host (a start waits up to
:data:`mochaos.operator.webhooks.admission.READY_TIMEOUT` for it to serve, then probes
every path)."""


class HostHandle(Protocol):
    """How the webhook host runs: a process of ours or a container (see :func:`host_handle`)."""

    def alive(self) -> bool:
        """True while the host runs."""
        ...

    def stop(self) -> None:
        """Stop the host (SIGTERM, then SIGKILL after a grace period) and wait until it is
        gone."""
        ...

    def record(self) -> dict[str, Any]:
        """What ``host.json`` keeps to find the host again (``kind`` and its identity)."""
        ...

    def attachment(self, name: str) -> Attached:
        """How ``cluster down`` stops the host, should it outlive its users (see
        :mod:`mochaos.cluster.local.attached`)."""
        ...


@dataclass(frozen=True)
class ProcessHost:
    """A webhook host run as a process, known by pid, command line and start time."""

    pid: int
    argv: list[str]
    started: int | None = None
    """Its start time (:func:`mochaos.procs.start_time`); None in records of older runs."""

    def alive(self) -> bool:
        """True while the pid is still the process started (:func:`mochaos.procs.runs`)."""
        return Started(self.pid, self.argv, self.started).running()

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after :data:`STOP_GRACE`; returns once it is
        gone."""
        Started(self.pid, self.argv, self.started).stop(STOP_GRACE)

    def record(self) -> dict[str, Any]:
        """``kind: process``, pid, argv and start time."""
        return {"kind": "process", "pid": self.pid, "argv": self.argv, "started": self.started}

    def attachment(self, name: str) -> Attached:
        """Its process group, known by pid, command line and start time."""
        return Attached(name, pid=self.pid, argv=self.argv, started=self.started)


def spawn(argv: list[str], env: dict[str, str], log: Path) -> ProcessHost:
    """Start the host's manager detached (its own session), its output appended to ``log``;
    its handle names it by the command line it was started with and its start time."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    found = Started.of(proc.pid, argv)
    return ProcessHost(found.pid, found.argv, found.started)


def host_handle(record: dict[str, Any]) -> HostHandle:
    """The handle ``host.json`` describes (a record without ``kind`` is a process)."""
    if record.get("kind") == "container":
        return ContainerHost.from_record(record)
    return ProcessHost(int(record["pid"]), list(record["argv"]), record.get("started"))


def port_free(port: int) -> bool:
    """True when nothing listens on ``port`` (a bind to all addresses succeeds)."""
    return not port_in_use(port, hosts=("0.0.0.0",))


def check_port_free(port: int = PORT) -> None:
    """UsageError when something already listens on the webhook port (another cluster's
    host: the port is the machine's, so one real-operator build runs per machine at once);
    the message names the listening process when ``/proc`` shows it."""
    if port_free(port):
        return
    owners = [f"pid {pid} ({' '.join(cmdline(pid)[:3])[:120]})" for pid in listeners(port)]
    raise UsageError(
        f"port {port} (the operator's webhook port) is in use on this machine"
        + (f" by {', '.join(owners)}" if owners else "")
        + ", e.g. by the webhook host of another local cluster's real-operator run",
        hint="run one real-operator build per machine at a time; `ss -ltnp "
        f"'sport = :{port}'` shows the owner",
    )


@dataclass(frozen=True)
class Recorded:
    """What ``host.json`` says: the record, its handle and the build it serves."""

    data: dict[str, Any]
    handle: HostHandle

    @property
    def build(self) -> str:
        """The operator build the host runs."""
        return str(self.data.get("build", ""))


@dataclass
class WebhookHost:
    """The shared webhook-serving manager of one cluster (see the module docstring)."""

    state: Path
    """Folder of this cluster's host: lock, host.json, users/, certs/, log."""
    build: str
    """Identifies the operator build (binary digest, or image id)."""
    attach_to: Path | None = None
    """The cluster's folder: a started host is attached to it, so that ``cluster down``
    stops a host its users left running (killed midway)."""
    port: int = PORT
    """The port the host serves on (the manager's is fixed; a stand-in's in tests is not)."""

    def _locked(self, what: str) -> contextlib.AbstractContextManager[None]:
        """The host's lock; lines say so while another process holds it (starting or
        stopping the host); waiting longer than :data:`LOCK_TIMEOUT` is an InfraError."""
        path = self.state / "lock"
        return holding(
            path, timeout=LOCK_TIMEOUT,
            waiting=f"waiting for another pytest process starting or stopping the operator's "
            f"webhook host, to {what}",
            too_long=lambda: InfraError(
                f"the operator's webhook host's lock was held for over {LOCK_TIMEOUT:.0f}s",
                hint=f"see which process holds {path} (`fuser -v {path}`)",
            ),
        )  # fmt: skip

    # -- records ------------------------------------------------------------------------

    def _recorded(self) -> Recorded | None:
        try:
            data = json.loads((self.state / "host.json").read_text())
            return Recorded(data, host_handle(data))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _record(self, data: dict[str, Any]) -> None:
        tmp = self.state / "host.json.tmp"
        tmp.write_text(json.dumps(data))
        tmp.replace(self.state / "host.json")
        if self.attach_to is not None:
            attached.attach(self.attach_to, host_handle(data).attachment(HOST_NAME))

    def _forget(self) -> None:
        (self.state / "host.json").unlink(missing_ok=True)
        if self.attach_to is not None:
            attached.detach(self.attach_to, HOST_NAME)

    def _users(self) -> list[int]:
        """The pytest processes using the host (files of processes gone are removed)."""
        users = self.state / "users"
        users.mkdir(parents=True, exist_ok=True)
        alive = []
        for f in users.iterdir():
            pid = int(f.name)
            said = f.read_text().strip()
            if start_time(pid) is not None and (not said or start_time(pid) == int(said)):
                alive.append(pid)
            else:
                f.unlink(missing_ok=True)
        return alive

    def _join(self) -> None:
        users = self.state / "users"
        users.mkdir(parents=True, exist_ok=True)
        (users / str(os.getpid())).write_text(str(start_time(os.getpid())))

    # -- life -----------------------------------------------------------------------------

    def acquire(self, start: Callable[[], HostHandle]) -> dict[str, Any]:
        """Join the running host of this build, or start one with ``start()`` (which returns
        once the host serves); the host's record."""
        with self._locked("join it"):
            found = self._recorded()
            if found is not None and found.build == self.build and found.handle.alive():
                self._join()
                return found.data
            if found is not None:
                self._replace(found)
            self._stop_unrecorded()
            check_port_free(self.port)
            data = {**start().record(), "build": self.build}
            self._record(data)
            self._join()
            return data

    def release(self, cleanup: Callable[[], object]) -> None:
        """Leave; the last user runs ``cleanup()`` (the webhook configurations) and stops the
        host, waiting until it is gone and its port free."""
        with self._locked("leave it"):
            (self.state / "users" / str(os.getpid())).unlink(missing_ok=True)
            if self._users():
                return
            try:
                cleanup()
            finally:
                found = self._recorded()
                if found is not None:
                    self._stop(found)

    def reclaim(self) -> list[str]:
        """Once nobody uses the host: stop a recorded or unrecorded host of this cluster left
        running (a killed run's); one line per thing found. While users remain, one line
        naming them, and nothing touched."""
        with self._locked("reclaim it"):
            users = self._users()
            if users:
                return [f"the operator's webhook host is still used by pytest processes {users}"]
            out = []
            found = self._recorded()
            if found is not None and found.handle.alive():
                self._stop(found)
                out.append(f"the webhook host of operator build {found.build[:12]} was still "
                           "running (stopped)")  # fmt: skip
            elif found is not None:
                self._forget()
            out += self._stop_unrecorded()
            return out

    def orphaned_configurations(self, unregister: Callable[[], list[str]]) -> list[str]:
        """Remove the webhook configurations when no host of this cluster runs to serve them
        (a host stopped or dead while they stayed registered: every write in a test
        namespace would be refused with "connection refused"); one line per configuration
        removed. Nothing is touched while a live host is recorded, nor while another
        process holds the host's lock (it is starting or stopping one: never waited for)."""
        self.state.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.state / "lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return []
        try:
            found = self._recorded()
            if found is not None and found.handle.alive():
                return []
            if found is not None:
                self._forget()
            return [f"the operator's {kind} was registered with no webhook host running "
                    "(removed)" for kind in unregister()]  # fmt: skip
        finally:
            lock.release()

    def _replace(self, found: Recorded) -> None:
        """Make way for a new host: a live host of another build is stopped when nobody uses
        it (refused while someone does); a dead one's record is dropped."""
        if not found.handle.alive():
            self._forget()
            return
        others = [p for p in self._users() if p != os.getpid()]
        if others:
            raise UsageError(
                f"operator build {found.build[:12]} serves the webhooks of this cluster for "
                f"pytest processes {others}",
                hint="run one operator build per cluster at a time (or another cluster: "
                "MOCHAOS_CLUSTER_NAME)",
            )
        announce(f"stopping the webhook host of operator build {found.build[:12]} "
                 "(no user left) to start this build's")  # fmt: skip
        self._stop(found)

    def _stop(self, found: Recorded) -> None:
        """Stop the recorded host; forget it once it is gone, then wait for the port."""
        found.handle.stop()
        if found.handle.alive():
            raise InfraError(
                f"the operator's webhook host ({found.data}) did not stop; its record stays "
                f"in {self.state / 'host.json'}",
                hint="stop it by hand, or `python -m mochaos cluster down`",
            )
        self._forget()
        if not wait_gone(lambda: bool(self._our_listeners()), PORT_FREE_TIMEOUT):
            left = self._our_listeners()
            announce(f"port {self.port} still held by this cluster's webhook host "
                     f"{PORT_FREE_TIMEOUT:.0f}s after it stopped (pids {left})")  # fmt: skip

    def _our_listeners(self) -> list[int]:
        """The processes listening on the port whose command line names this cluster's
        certificate folder (a host of ours, process or container)."""
        ours = f"{CERT_FLAG}={self.state / 'certs'}"
        return [pid for pid in listeners(self.port) if ours in cmdline(pid)]

    def _stop_unrecorded(self) -> list[str]:
        """Stop a host of this cluster that listens on the port with no record (an older
        mo-chaos lost it): by pid, after checking that its command line names this cluster's
        certificate folder. One line per host stopped."""
        out = []
        for pid in self._our_listeners():
            if stop_group(pid, cmdline(pid), STOP_GRACE, started=start_time(pid)):
                out.append(f"an unrecorded webhook host of this cluster (pid {pid}) was "
                           "listening (stopped)")  # fmt: skip
                announce(out[-1])
        wait_gone(lambda: bool(self._our_listeners()), PORT_FREE_TIMEOUT)
        return out


def orphaned_webhooks(cluster: Cluster) -> list[str]:
    """At a run's start on a local cluster: the operator's webhook configurations removed when
    no webhook host of the cluster runs (see :meth:`WebhookHost.orphaned_configurations`);
    nothing on a cluster without a state folder (kind, existing: not ours)."""
    if cluster.state_dir is None:
        return []
    host = WebhookHost(cluster.state_dir / "operator-webhooks", build="")
    return host.orphaned_configurations(lambda: unregister(cluster))
