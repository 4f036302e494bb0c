"""The command runner: streamed progress, the log, one-line failures, the recording runner."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mochaos import exits
from mochaos.errors import InfraError
from mochaos.tooling.runner import RecordingRunner, Result, SubprocessRunner, reason

PY = sys.executable


def test_subprocess_runner_returns_stdout_and_streams_stderr(tmp_path: Path) -> None:
    seen: list[str] = []
    runner = SubprocessRunner(progress=seen.append, log_path=tmp_path / "cmd.log")
    script = "import sys; print('out-line'); print('step 1', file=sys.stderr)"
    result = runner([PY, "-c", script], what="demo")
    assert result.returncode == 0
    assert result.stdout == "out-line\n"
    assert seen == ["step 1"]
    assert "out-line" in (tmp_path / "cmd.log").read_text()


def test_subprocess_runner_echoes_stdout_only_when_asked() -> None:
    seen: list[str] = []
    runner = SubprocessRunner(progress=seen.append)
    runner([PY, "-c", "print('helm says')"], what="demo", echo_stdout=True)
    assert seen == ["helm says"]


def test_subprocess_runner_failure_is_one_line_infra_error() -> None:
    runner = SubprocessRunner(progress=None)
    script = "import sys; print('noise', file=sys.stderr); print('ERROR: the reason', file=sys.stderr); sys.exit(4)"  # noqa: E501
    with pytest.raises(InfraError) as info:
        runner([PY, "-c", script], what="kind create cluster x", hint="do this")
    assert str(info.value) == "kind create cluster x failed (exit 4): the reason: do this"
    assert info.value.exit_code == exits.INFRA
    assert "\n" not in str(info.value)


def test_subprocess_runner_without_check_returns_the_failure() -> None:
    result = SubprocessRunner(progress=None)(
        [PY, "-c", "raise SystemExit(2)"], what="x", check=False
    )
    assert result.returncode == 2


def test_subprocess_runner_passes_extra_environment() -> None:
    runner = SubprocessRunner(progress=None, env={"MOCHAOS_PROBE": "42"})
    script = "import os; print(os.environ['MOCHAOS_PROBE'], 'PATH' in os.environ)"
    assert runner([PY, "-c", script], what="x").stdout.split() == ["42", "True"]


def test_subprocess_runner_kills_a_command_that_overruns() -> None:
    runner = SubprocessRunner(progress=None)
    with pytest.raises(InfraError, match=r"^slow step timed out after 0s"):
        runner([PY, "-c", "import time; time.sleep(30)"], what="slow step", timeout=0.2)


def test_subprocess_runner_reports_a_missing_program() -> None:
    with pytest.raises(InfraError, match="could not start"):
        SubprocessRunner(progress=None)(["/nonexistent/kind"], what="kind version")


def test_reason_is_the_last_line_without_kinds_prefixes() -> None:
    res = Result(("kind",), 1, "", "ERROR: failed to list\n\nCommand Output: Cannot connect\n")
    assert reason(res) == "Cannot connect"
    assert reason(Result(("helm",), 1, "", "Error: UPGRADE FAILED: timed out\n")) == (
        "UPGRADE FAILED: timed out"
    )
    assert reason(Result(("x",), 1)) == "no output"


def test_recording_runner_matches_the_longest_prefix_and_records() -> None:
    runner = RecordingRunner(
        {
            "kind get": "generic\n",
            "kind get clusters": "mochaos\n",
            "kind delete": Result(("kind",), 1, "", "ERROR: nope"),
        }
    )
    assert runner(["/opt/bin/kind", "get", "clusters"], what="x").stdout == "mochaos\n"
    assert runner(["kind", "get", "kubeconfig"], what="x").stdout == "generic\n"
    assert runner(["kind", "load"], what="x").stdout == ""
    with pytest.raises(InfraError, match=r"^kind delete failed \(exit 1\): nope$"):
        runner(["kind", "delete", "cluster"], what="kind delete")
    assert runner.commands() == [
        "kind get clusters",
        "kind get kubeconfig",
        "kind load",
        "kind delete cluster",
    ]
