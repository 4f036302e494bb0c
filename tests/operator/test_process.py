"""An operator process: a restart waits for the new process's own readiness."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.operator.process import OperatorProcess, read_lines, tail
from mochaos.types import Waits


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))


def test_a_restart_waits_until_the_new_process_is_ready(tmp_path: Path):
    script = tmp_path / "manager"
    script.write_text("#!/bin/sh\necho starting\nsleep 0.4\necho READY\nexec sleep 60\n")
    script.chmod(0o755)
    proc = OperatorProcess(
        target="binary:x", version="v", user_agent="manager", command=[str(script)],
        log_path=tmp_path / "operator.log", ready=lambda p: "READY" in p.log_lines(),
        ready_timeout=10, sessions=None, waits=Waits(),  # type: ignore[arg-type]
    )  # fmt: skip
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
