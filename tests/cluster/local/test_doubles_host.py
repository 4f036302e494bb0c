"""Which recorded doubles ``up()`` starts afresh (:func:`doubles_host.stale`), on a
supervision folder of its own and a real process (a copy of ``sleep``): no cluster needed."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mochaos.cluster.local import doubles_host
from mochaos.cluster.local.processes import ProcessSpec, write_pid
from mochaos.cluster.local.supervisor import Supervision
from mochaos.doubles import DoubleContext, DoubleSpec
from mochaos.procs import Started, executable_replaced

SLEEP = shutil.which("sleep")
pytestmark = pytest.mark.skipif(SLEEP is None, reason="no sleep binary")


@pytest.fixture
def program(tmp_path: Path) -> Path:
    """A binary of our own, to replace on disk while it runs."""
    path = tmp_path / "bin" / "double"
    path.parent.mkdir()
    shutil.copy2(SLEEP, path)
    return path


@pytest.fixture
def running(program: Path) -> Iterator[subprocess.Popen[bytes]]:
    argv = [str(program), "300"]
    proc = subprocess.Popen(argv)
    Started.of(proc.pid, argv)  # its command line shows (a moment after Popen returns)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _rebuild(program: Path) -> None:
    """What a build does: a new file put in place of the old one."""
    fresh = program.with_name(".double.new")
    shutil.copy2(SLEEP, fresh)
    os.replace(fresh, program)


def _setup(tmp_path: Path, argv: list[str], pid: int | None):
    sup = Supervision(tmp_path / "cluster")
    spec = ProcessSpec(name="d", argv=argv, log=str(tmp_path / "d.log"))
    sup.set_table([spec])
    if pid is not None:
        write_pid(sup.process_pid_file("d"), pid)
    double = DoubleSpec(
        name="d", description="test", command=lambda ctx: argv, health=lambda ctx: None
    )
    ctx = DoubleContext("c", tmp_path / "kubeconfig", tmp_path / "state", tmp_path / "d.log")
    return sup, double, {"d": ctx}


def test_a_running_double_as_recorded_is_kept(tmp_path, program, running):
    sup, double, ctxs = _setup(tmp_path, [str(program), "300"], running.pid)
    assert doubles_host.stale([double], ctxs, sup, restarting=False) == []


def test_a_double_whose_binary_was_rebuilt_is_stale(tmp_path, program, running):
    sup, double, ctxs = _setup(tmp_path, [str(program), "300"], running.pid)
    assert not executable_replaced(running.pid)
    _rebuild(program)
    assert executable_replaced(running.pid)
    assert [s.name for s in doubles_host.stale([double], ctxs, sup, restarting=True)] == ["d"]


def test_a_double_recorded_with_another_command_is_stale(tmp_path, program, running):
    sup, _, ctxs = _setup(tmp_path, [str(program), "300"], running.pid)
    newer = DoubleSpec(
        name="d", description="test", command=lambda ctx: [str(program), "301"],
        health=lambda ctx: None,
    )  # fmt: skip
    assert [s.name for s in doubles_host.stale([newer], ctxs, sup, restarting=True)] == ["d"]


def test_a_down_double_is_stale_unless_the_supervisor_is_restarting_it(tmp_path, program):
    sup, double, ctxs = _setup(tmp_path, [str(program), "300"], None)
    assert [s.name for s in doubles_host.stale([double], ctxs, sup, restarting=False)] == ["d"]
    assert doubles_host.stale([double], ctxs, sup, restarting=True) == []
