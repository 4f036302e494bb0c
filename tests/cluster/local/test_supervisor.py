"""The supervisor's loop on plain processes (no cluster): restart, back-off, holds, adoption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from mochaos.cluster import events
from mochaos.cluster.local.processes import ProcessSpec, read_pid, runs, spawn, write_pid
from mochaos.cluster.local.supervisor import Supervision, Supervisor, backoff, describe_exit
from mochaos.procs import cmdline

from support import polling

wait_until = partial(polling.wait_until, timeout=10.0)


@pytest.fixture
def sup(tmp_path: Path) -> Supervision:
    (tmp_path / "cluster" / "pids").mkdir(parents=True)
    return Supervision(tmp_path / "cluster")


def sleeper(sup: Supervision, name: str) -> ProcessSpec:
    """A process of the 'cluster': its argv names the cluster's folder, like a component's."""
    return ProcessSpec(
        name=name,
        argv=[sys.executable, "-c", "import time; time.sleep(600)", str(sup.cluster_dir), name],
        env=dict(os.environ),
        cwd=str(sup.cluster_dir),
        log=str(sup.cluster_dir / "logs" / f"{name}.log"),
    )


@pytest.fixture
def running(sup: Supervision) -> Iterator[tuple[ProcessSpec, subprocess.Popen[bytes]]]:
    """One supervised process, started as kwokctl starts a component (not by the
    supervisor); everything left of it is killed at the end."""
    spec = sleeper(sup, "etcd")
    proc = spawn(spec)
    write_pid(sup.process_pid_file("etcd"), proc.pid)
    sup.set_table([spec])
    wait_until(lambda: runs(proc.pid, spec), what="the process starting")
    yield spec, proc
    for pid in {proc.pid, read_pid(sup.process_pid_file("etcd")) or proc.pid}:
        if runs(pid, spec):
            os.kill(pid, signal.SIGKILL)
    proc.wait()


@pytest.fixture
def supervisor(sup: Supervision) -> Iterator[Supervisor]:
    """The supervisor's loop in a thread."""
    loop = Supervisor(sup)
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    thread.start()
    yield loop
    stop.set()
    thread.join(timeout=5)


def test_the_back_off_doubles_from_a_quarter_second_up_to_thirty():
    assert [backoff(n) for n in range(1, 10)] == [0.25, 0.5, 1, 2, 4, 8, 16, 30, 30]


def test_exit_statuses_are_described():
    assert describe_exit(1) == "exit status 1"
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(None).startswith("exited (status unknown")


def test_a_killed_process_is_restarted_as_it_ran_and_the_restart_recorded(sup, running, supervisor):
    spec, proc = running
    killed_at = time.time()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (first,) = wait_until(lambda: events.read(sup.events_file), what="a restart event")
    new_pid = read_pid(sup.process_pid_file("etcd"))
    assert new_pid == first.new_pid != proc.pid
    assert cmdline(new_pid) == spec.argv, "not restarted exactly as it ran"
    assert first.old_pid == proc.pid and first.component == "etcd"
    assert first.event == "restarted" and first.attempt == 1 and first.delay == backoff(1)
    assert first.exit.startswith("exited (status unknown"), "kwokctl's child, not ours"
    assert first.t >= killed_at
    # The restarted process is the supervisor's child: its exit status is known.
    os.kill(new_pid, signal.SIGKILL)
    second = wait_until(lambda: events.read(sup.events_file)[1:], what="a second restart")[0]
    assert second.exit == "killed by SIGKILL"
    assert second.attempt == 2 and second.delay == backoff(2), "no back-off on a crash loop"
    assert second.old_pid == new_pid


def test_a_held_process_is_left_down_until_released(sup, running, supervisor):
    _, proc = running
    sup.hold("etcd")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(1.0)  # four polls and the first back-off: nothing may happen while held
    assert events.read(sup.events_file) == []
    sup.release("etcd")
    wait_until(lambda: events.read(sup.events_file), what="the restart after the release")


def test_a_hold_by_a_dead_process_is_ignored(sup, running, supervisor):
    _, proc = running
    hold_file = sup.folder / "hold" / "etcd"
    # The holder shows the hold it wrote before it exits: once it is gone, the supervisor may
    # drop that hold at any moment, so its existence afterwards is no evidence either way.
    holder = subprocess.run(
        [sys.executable, "-c", "import os; from mochaos.cluster.local.supervisor import "
         f"Supervision; Supervision(__import__('pathlib').Path({str(sup.cluster_dir)!r}))"
         f".hold('etcd'); print(os.getpid(), open({str(hold_file)!r}).read())"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    pid, written = holder.stdout.split(" ", 1)
    assert json.loads(written)["pid"] == int(pid), holder.stdout
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_until(lambda: events.read(sup.events_file), what="a restart despite the stale hold")
    assert not hold_file.exists()


def test_a_process_started_by_someone_else_is_adopted_not_doubled(sup, running, supervisor):
    spec, proc = running
    other = spawn(spec)  # e.g. started just before a previous supervisor died
    try:
        wait_until(lambda: runs(other.pid, spec), what="the second start")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        wait_until(lambda: read_pid(sup.process_pid_file("etcd")) == other.pid, what="the adoption")
        time.sleep(0.5)
        assert events.read(sup.events_file) == [], "adopted, so nothing was restarted"
    finally:
        other.kill()
        other.wait()


def test_a_second_supervisor_for_the_same_cluster_exits_at_once(sup):
    first, started = sup.ensure_running()
    try:
        assert started
        wait_until(lambda: sup.pid() == first and "supervising" in sup.log_file.read_text(),
                   what="the supervisor running")  # fmt: skip
        again = subprocess.run(sup.command(), capture_output=True, text=True, timeout=30)
        assert again.returncode == 0
        assert "another supervisor already runs" in again.stdout
        assert sup.ensure_running() == (first, False)
    finally:
        sup.stop()
    assert sup.pid() is None


def test_a_supervisor_started_under_the_module_s_former_name_is_recognised(tmp_path, monkeypatch):
    """A cluster kept from before the provider's modules moved keeps its supervisor: it is
    found (so no second one starts beside it, and ``down`` stops it), any other is not."""
    from mochaos.cluster.local import supervisor

    sup = Supervision(tmp_path)
    sup.pid_file.parent.mkdir(parents=True, exist_ok=True)
    write_pid(sup.pid_file, 4242)
    lines = {
        "mochaos.cluster.supervisor": 4242,
        supervisor.MODULE: 4242,
        "mochaos.cluster.elsewhere": None,
    }
    for module, expected in lines.items():
        argv = ["/other/python", "-m", module, str(tmp_path)]
        monkeypatch.setattr(supervisor, "cmdline", lambda pid, argv=argv: argv)
        assert sup.pid() == expected, module
