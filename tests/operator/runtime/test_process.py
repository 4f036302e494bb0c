"""An operator process: a restart waits for the new process's own readiness."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from mochaos.operator.runtime.process import OperatorProcess
from mochaos.operator.target import Waits
from mochaos.tooling.followed_files import read_lines, tail


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))


def test_a_restart_waits_until_the_new_process_is_ready(tmp_path: Path):
    proc = _manager(tmp_path, "echo starting\nsleep 0.4\necho READY", ready_timeout=10)
    proc.start()
    proc.restart()
    try:
        assert read_lines(tmp_path / "operator.log").count("READY") == 2
        assert proc.log_lines() == ["starting", "READY"]
    finally:
        proc.stop()


def test_lines_are_read_from_an_offset_and_tails_skip_blank_lines(tmp_path: Path):
    log = tmp_path / "log"
    log.write_text("a\nb\n\nc\n")
    assert read_lines(log, 2) == ["b", "", "c"]
    assert read_lines(tmp_path / "absent") == []
    assert tail(read_lines(log), 2) == "b | c"


def test_time_frozen_from_outside_does_not_count_against_getting_ready(tmp_path: Path):
    # Ready 0.5 s after start, within 1.5 s; someone stops it for 2 s right after start
    # (red: "not ready after 2s").
    proc = _manager(tmp_path, "sleep 0.5\necho READY", ready_timeout=1.5)
    freeze = threading.Thread(target=_freeze_soon, args=(proc, 2.0), daemon=True)
    freeze.start()
    try:
        proc.start()
    finally:
        freeze.join()
        proc.stop()


def _manager(tmp_path: Path, lines: str, *, ready_timeout: float) -> OperatorProcess:
    """An operator process running a shell script of ``lines`` (then sleeping), ready once
    its log says READY."""
    script = tmp_path / "manager"
    script.write_text(f"#!/bin/sh\n{lines}\nexec sleep 60\n")
    script.chmod(0o755)
    return OperatorProcess(
        target="binary:x", version="v", user_agent="manager", command=[str(script)],
        log_path=tmp_path / "operator.log", ready=lambda p: "READY" in p.log_lines(),
        ready_timeout=ready_timeout, sessions=None, waits=Waits(),  # type: ignore[arg-type]
    )  # fmt: skip


def _freeze_soon(proc: OperatorProcess, seconds: float) -> None:
    """SIGSTOP the process as soon as it runs, SIGCONT ``seconds`` later (as an outsider)."""
    while proc.pid is None:
        time.sleep(0.01)
    pid = proc.pid
    os.kill(pid, signal.SIGSTOP)
    time.sleep(seconds)
    os.kill(pid, signal.SIGCONT)
