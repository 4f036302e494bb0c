"""Things attached to a cluster are stopped with it: a process group only while its pid
runs the recorded command line, anything else by its stop command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mochaos.cluster.local import attached
from mochaos.cluster.local.attached import Attached
from mochaos.procs import cmdline, wait_gone

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def _sleeper() -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(SLEEPER, start_new_session=True)
    wait_gone(lambda: cmdline(proc.pid) != SLEEPER, 10)
    return proc


def test_an_attached_process_group_is_stopped_and_forgotten(tmp_path: Path):
    proc = _sleeper()
    attached.attach(tmp_path, Attached("host", pid=proc.pid, argv=cmdline(proc.pid)))
    assert [a.name for a in attached.attached(tmp_path)] == ["host"]
    assert attached.stop_all(tmp_path) == ["host"]
    assert proc.wait(timeout=10) is not None
    assert attached.attached(tmp_path) == []


def test_a_reused_pid_is_not_signalled(tmp_path: Path):
    proc = _sleeper()
    try:
        attached.attach(tmp_path, Attached("host", pid=proc.pid, argv=["something", "else"]))
        assert attached.stop_all(tmp_path) == []
        assert proc.poll() is None, "a process that is not ours was signalled"
        assert attached.attached(tmp_path) == []
    finally:
        proc.kill()
        proc.wait()


def test_a_stop_command_is_run_with_its_environment(tmp_path: Path):
    mark = tmp_path / "stopped"
    item = Attached("container", stop=["sh", "-c", 'touch "$MARK"'], env={"MARK": str(mark)})
    attached.attach(tmp_path, item)
    assert attached.stop_all(tmp_path) == ["container"]
    assert mark.exists()


def test_detached_things_are_left_alone(tmp_path: Path):
    proc = _sleeper()
    try:
        attached.attach(tmp_path, Attached("host", pid=proc.pid, argv=cmdline(proc.pid)))
        attached.detach(tmp_path, "host")
        assert attached.stop_all(tmp_path) == []
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
