"""Helpers of the safety tests: child pytest runs, their JUnit files, state files, processes.

Most safety properties only show from outside: a child pytest is started (and
interrupted, killed, or fed bad input) exactly as a user or CI would, and its
exit status, JUnit file, state file and leftover processes are checked.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mochaos.binaries import control_plane
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.paths import state_dir
from mochaos.report.junit import JUnitCase, read_junit

ROOT = Path(__file__).resolve().parents[2]
CHILD = ROOT / "tests" / "safety" / "child"
TIME_SCALE = "0.2"
SHORT_SCENARIO = "test_pod_lost_while_bound"
"""The shortest suite scenario (pool, one claim, one pod deletion): ~25 s at --time-scale 0.2."""

needs_binaries = pytest.mark.skipif(
    not control_plane.all_built(), reason="local binaries not built"
)


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment without pytest's own variables (xdist worker ids) and
    KUBECONFIG, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KUBECONFIG"))}
    return env | extra


def pytest_command(tmp_path: Path, *args: str) -> list[str]:
    """``python -m pytest <args>`` with a JUnit file and reports folder under ``tmp_path``."""
    return [
        # One scenario at a time unless a test asks for workers (a later -n wins).
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0",
        "--time-scale", TIME_SCALE, "--junitxml", str(tmp_path / "junit.xml"),
        "--mochaos-reports-dir", str(tmp_path / "reports"), *args,
    ]  # fmt: skip


@dataclass
class ChildRun:
    """Exit status, JUnit cases and output of a finished child pytest."""

    exit_code: int
    cases: dict[str, JUnitCase]
    output: str
    reports: Path

    def case(self, name: str) -> JUnitCase:
        """The JUnit case called ``name``."""
        assert name in self.cases, f"{name} not in {sorted(self.cases)}\n{self.output[-3000:]}"
        return self.cases[name]

    def run_dir(self) -> Path:
        """The child run's report folder (reports/<run-id>)."""
        return (self.reports / "latest").resolve()


def run_child(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
              timeout: float = 600) -> ChildRun:  # fmt: skip
    """Run a child pytest to its end (see :func:`pytest_command`)."""
    proc = subprocess.run(
        pytest_command(tmp_path, *args), cwd=ROOT, env=env or child_env(),
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    junit = tmp_path / "junit.xml"
    cases = read_junit(junit) if junit.exists() else {}
    return ChildRun(proc.returncode, cases, proc.stdout + proc.stderr, tmp_path / "reports")


# -- state files and processes --------------------------------------------------------


def state_file(pid: int) -> Path:
    """The crash-safety state file of process ``pid``."""
    return state_dir() / "runs" / f"{pid}.json"


def read_state(pid: int) -> dict[str, Any]:
    """The state file of ``pid`` ({} when absent or half-written)."""
    try:
        return json.loads(state_file(pid).read_text())
    except (OSError, ValueError):
        return {}


def dead_pid() -> int:
    """The pid of a process that has exited."""
    probe = subprocess.Popen(["true"])
    probe.wait()
    return probe.pid


# -- private local clusters ------------------------------------------------------------


def private_cluster_name() -> str:
    """A fresh cluster name that can never be the shared ``mochaos`` cluster."""
    return f"mc-safety-{secrets.token_hex(3)}"


def remove_private_cluster(name: str) -> None:
    """Remove a private cluster, whatever state it is in, and its lock file."""
    assert name.startswith("mc-safety-"), name
    provider = LocalProvider(name=name)
    provider.down()
    (provider.workdir / f"{name}.lock").unlink(missing_ok=True)
