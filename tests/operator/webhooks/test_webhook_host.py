"""The webhook host's life cycle with a real process: a stand-in manager (``webhook_standin``,
built with Go) started, joined and stopped by worker processes through the product's own
start path (spawn, wait until serving) and :class:`~mochaos.operator.webhooks.host.WebhookHost`.

On a free port rather than the manager's 9443 (the machine's), so that these tests run
beside a real-operator run. Each test waits for its workers and leaves no process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from mochaos.errors import UsageError
from mochaos.kube import Cluster
from mochaos.operator.runtime.manager_launch import ManagerLaunch
from mochaos.operator.targets.local_manager import ManagerTarget
from mochaos.operator.webhooks.admission import host_args, make_certificates
from mochaos.operator.webhooks.host import WebhookHost, port_free, spawn
from mochaos.procs import cmdline, start_time

from support.polling import wait_until
from support.standins import go_build

HERE = Path(__file__).resolve().parent
STANDIN = HERE / "webhook_standin" / "main.go"
WORKER = HERE / "host_worker.py"
WORKERS = 6
"""As many workers as the issue's `-n 6` run."""
WORKER_TIMEOUT = 120.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def standin_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fake matrixone-operator checkout whose ``cmd/operator`` is the stand-in."""
    tree = tmp_path_factory.mktemp("checkout")
    (tree / "cmd" / "operator").mkdir(parents=True)
    shutil.copy(STANDIN, tree / "cmd" / "operator" / "main.go")
    (tree / "go.mod").write_text("module example.com/standin\n\ngo 1.22\n")
    return tree


@pytest.fixture(scope="module")
def standin_binary(standin_source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in manager, built once."""
    out = tmp_path_factory.mktemp("standin") / "manager"
    return go_build("./cmd/operator", out, cwd=standin_source)


@dataclass
class Bench:
    """One test's host folder, port, fake cluster, and the stand-ins it may start."""

    root: Path
    port: int
    manager: Path

    @property
    def state(self) -> Path:
        return self.root / "operator-webhooks"

    @property
    def cluster_dir(self) -> Path:
        return self.root / "cluster"

    def starts(self, manager: Path | None = None) -> list[int]:
        """The pids of every stand-in start so far."""
        path = Path(f"{manager or self.manager}.starts")
        return [int(ln) for ln in path.read_text().split()] if path.exists() else []

    def running(self) -> list[int]:
        """Stand-ins of this test still running."""
        found = [m.with_suffix("") for m in self.root.rglob("manager.starts")]
        pids = {p for m in found for p in self.starts(m)}
        return sorted(p for p in pids if start_time(p) is not None and self._ours(p))

    def _ours(self, pid: int) -> bool:
        argv = cmdline(pid)
        return bool(argv) and argv[0].startswith(str(self.root))

    def manager_copy(self, name: str, *knobs: str) -> Path:
        """Another build of the stand-in (a copy in its own folder, its digest made its own
        by trailing bytes), with ``knobs`` set."""
        out = self.root / name / "manager"
        out.parent.mkdir(exist_ok=True)
        shutil.copy(self.manager, out)
        with out.open("ab") as fh:
            fh.write(name.encode())
        out.chmod(out.stat().st_mode | stat.S_IEXEC)
        for k in knobs:
            Path(f"{out}.{k}").write_text("1")
        return out

    def workers(self, n: int, *, at: float | None = None, **config: Any) -> list[Worker]:
        """``n`` worker processes arriving at the same instant (``at``, default in 1.5 s),
        each holding the host until the file ``leave`` exists."""
        start_at = at if at is not None else time.time() + 1.5
        return [self.worker(f"w{i}", start_at=start_at, hold_until=str(self.leave), **config)
                for i in range(n)]  # fmt: skip

    @property
    def leave(self) -> Path:
        """Created by a test when its workers may release the host."""
        return self.root / "leave"

    def worker(self, name: str, *, env: dict[str, str] | None = None, **config: Any) -> Worker:
        out = self.root / f"{name}.json"
        cfg = {
            "state": str(self.state), "port": self.port, "manager": str(self.manager),
            "kubeconfig": str(_kubeconfig(self.root)), "cluster_dir": str(self.cluster_dir),
            "out": str(out), **config,
        }  # fmt: skip
        path = self.root / f"{name}.config.json"
        path.write_text(json.dumps(cfg))
        log = (self.root / f"{name}.log").open("wb")
        proc = subprocess.Popen([sys.executable, str(WORKER), str(path)], stdout=log,
                                stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})})  # fmt: skip
        return Worker(name, proc, out, self.root / f"{name}.log")


@dataclass
class Worker:
    name: str
    proc: subprocess.Popen[bytes]
    out: Path
    log: Path

    def seen(self) -> dict[str, Any]:
        return json.loads(self.out.read_text()) if self.out.exists() else {}

    def wait(self) -> dict[str, Any]:
        rc = self.proc.wait(timeout=WORKER_TIMEOUT)
        seen = self.seen()
        assert rc == 0, (self.name, rc, seen, self.log.read_text(errors="replace")[-2000:])
        return seen


def _kubeconfig(root: Path) -> Path:
    path = root / "kubeconfig.yaml"
    if not path.exists():
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}}],
            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
            "users": [{"name": "c", "user": {"token": "t"}}],
        }))  # fmt: skip
    return path


@pytest.fixture
def bench(tmp_path: Path, standin_binary: Path) -> Iterator[Bench]:
    """A host folder and a free port; stand-ins left running fail the test (then stopped)."""
    port = _free_port()
    b = Bench(tmp_path, port, standin_binary)
    b.manager = b.manager_copy("bin")
    (b.state / "certs").mkdir(parents=True)
    (b.state / "certs" / "standin-port").write_text(str(port))  # the stand-in's knob
    yield b
    left = b.running()
    for pid in left:
        os.killpg(pid, signal.SIGKILL)
    assert not left, f"stand-ins left running: {left}"


def _together(bench: Bench, workers: list[Worker]) -> list[dict[str, Any]]:
    """What each worker saw once all of them hold the host (or failed), then released."""
    wait_until(lambda: all(w.seen() or w.proc.poll() is not None for w in workers),
               what="every worker joined", timeout=WORKER_TIMEOUT)  # fmt: skip
    held = [w.seen() for w in workers]
    bench.leave.touch()
    for w in workers:
        w.wait()
    return held


def _after_all_left(bench: Bench) -> None:
    """Nothing of the host is left: no process, a free port, no record, no user."""
    assert bench.running() == []
    assert port_free(bench.port)
    assert not (bench.state / "host.json").exists()
    assert list((bench.state / "users").iterdir()) == []
    assert list((bench.cluster_dir / "attached").glob("*.json")) == []


# -- the handle ---------------------------------------------------------------------------


def _cold(path: Path) -> None:
    """Drop the file's pages from the page cache, as for a binary never run before."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def test_a_started_host_is_known_as_running_at_once_however_its_exec_goes(bench: Bench):
    # Popen returns before the kernel has set the new program's arguments: a handle recorded
    # from /proc right then names an empty command line, and the host counts as dead while
    # it serves (red: the leaked hosts and the second starts of the issue).
    certs = make_certificates(bench.state / "certs")
    argv = [str(bench.manager), *host_args(certs)]
    for attempt in range(10):
        _cold(bench.manager)
        handle = spawn(argv, {"PATH": os.environ["PATH"]}, bench.root / "host.log")
        try:
            assert handle.alive(), f"attempt {attempt}: {handle} counted as gone while it runs"
        finally:
            handle.stop()
        assert not handle.alive()


def test_the_targets_spawn_names_the_host_it_started(bench: Bench):
    # The same through the manager target's own spawn (what the product records).
    certs = make_certificates(bench.state / "certs")
    target = ManagerTarget(spec="binary:standin", version="v", crd_root=bench.root,
                           crd_source="standin", binary=bench.manager)  # fmt: skip
    cluster = Cluster("standin", "local", _kubeconfig(bench.root), "v1", state_dir=bench.root)
    launch = ManagerLaunch(binary=bench.manager, namespace="mochaos-webhooks",
                           workdir=bench.root / "host", hosts_file=None, webhooks=True)  # fmt: skip
    for attempt in range(10):
        _cold(bench.manager)
        handle = target._spawn_host(cluster, launch, certs, bench.root / "host.log")
        try:
            assert handle.alive(), f"attempt {attempt}: {handle} counted as gone while it runs"
        finally:
            handle.stop()


# -- one host for many workers ------------------------------------------------------------


def test_workers_arriving_in_the_same_instant_start_one_host_and_all_see_it_serve(bench):
    seen = _together(bench, bench.workers(WORKERS))
    assert len(bench.starts()) == 1, f"host started {len(bench.starts())} times: {seen}"
    assert all(s["serving"] for s in seen), seen
    assert len({s["record"]["pid"] for s in seen}) == 1, seen
    _after_all_left(bench)


def test_a_join_never_checks_the_port_its_host_holds(bench: Bench):
    # The first worker's host holds the port; every later worker joins it (a port check on
    # a join would refuse them all: "port … is in use").
    leave = bench.root / "first-leaves"
    first = bench.worker("first", hold_until=str(leave))
    wait_until(lambda: first.seen().get("serving"), what="the first host serving",
               timeout=WORKER_TIMEOUT)  # fmt: skip
    seen = _together(bench, bench.workers(WORKERS - 1, at=time.time()))
    assert all(s.get("serving") for s in seen), seen
    leave.touch()
    assert first.wait()["released"]
    assert len(bench.starts()) == 1
    _after_all_left(bench)


def _slow_go(root: Path, seconds: float) -> Path:
    """A folder with a ``go`` that sleeps before each build: a slow build, as the real
    manager's (minutes cold)."""
    real = shutil.which("go")
    assert real is not None
    folder = root / "slow-go"
    folder.mkdir()
    script = folder / "go"
    script.write_text(f'#!/bin/sh\n[ "$1" = build ] && sleep {seconds}\nexec {real} "$@"\n')
    script.chmod(0o755)
    return folder


def test_workers_waiting_for_a_slow_build_then_join_one_host(bench, standin_source, tmp_path):
    # One worker builds (through the product's build), the others wait for it with a line,
    # then they all arrive at the host at once.
    cache = tmp_path / "cache"
    path = f"{_slow_go(tmp_path, 4.0)}:{os.environ['PATH']}"
    workers = bench.workers(WORKERS, manager=None, checkout=str(standin_source),
                            env={"MOCHAOS_CACHE": str(cache), "PATH": path})  # fmt: skip
    seen = _together(bench, workers)
    built = next(cache.glob("operator/bin/*/manager"))
    logs = [w.log.read_text(errors="replace") for w in workers]
    assert sum("mo-chaos: building the manager" in log for log in logs) == 1, logs
    assert sum("waiting for another process building" in log for log in logs) == WORKERS - 1
    assert all(s["serving"] for s in seen), seen
    assert len(bench.starts(built)) == 1, bench.starts(built)
    _after_all_left(bench)


# -- hosts of other builds, and hosts without a record ------------------------------------


def test_a_killed_runs_host_of_another_build_is_stopped_before_this_builds_starts(bench):
    old = bench.manager_copy("bin-old")
    killed = bench.worker("killed", manager=str(old), hold=600.0)
    wait_until(lambda: killed.seen().get("serving"), what="the old host serving",
               timeout=WORKER_TIMEOUT)  # fmt: skip
    killed.proc.send_signal(signal.SIGKILL)
    killed.proc.wait()
    (old_pid,) = bench.starts(old)
    assert start_time(old_pid) is not None, "the killed run's host runs on"
    seen = bench.worker("next").wait()
    assert start_time(old_pid) is None, "the other build's host was not stopped"
    assert seen["serving"] and seen["record"]["pid"] != old_pid
    _after_all_left(bench)


def test_a_host_deaf_to_sigterm_is_killed_and_waited_for_before_the_record_goes(bench):
    bench.manager = bench.manager_copy("bin-deaf", "ignore-term")
    seen = bench.worker("only").wait()
    assert start_time(seen["record"]["pid"]) is None
    _after_all_left(bench)


def test_an_unrecorded_host_of_this_cluster_is_stopped_by_pid_before_a_start(bench: Bench):
    # Left by an older mo-chaos that lost its record: known by our certificate folder on its
    # command line.
    certs = make_certificates(bench.state / "certs")
    orphan = subprocess.Popen([str(bench.manager), *host_args(certs)], start_new_session=True,
                              stdout=subprocess.DEVNULL)  # fmt: skip
    wait_until(lambda: not port_free(bench.port), what="the orphan listening", timeout=30)
    seen = bench.worker("next").wait()
    assert orphan.wait(timeout=10) is not None
    assert seen["serving"] and seen["record"]["pid"] != orphan.pid
    _after_all_left(bench)


def test_a_port_taken_by_someone_else_is_a_usage_error_naming_the_owner(bench: Bench):
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("0.0.0.0", bench.port))
        sock.listen()
        host = WebhookHost(bench.state, build="b", port=bench.port)
        with pytest.raises(UsageError, match=rf"port {bench.port} .* in use on this machine by "
                                             rf"pid {os.getpid()} "):  # fmt: skip
            host.acquire(lambda: pytest.fail("a host was started on a taken port"))
    assert bench.starts() == []
