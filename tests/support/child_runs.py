"""Child pytest runs of the tests (safety, scenario, interpose, operator), their state files,
processes and private clusters.

Most safety properties only show from outside: a child pytest is started (and
interrupted, killed, or fed bad input) exactly as a user or CI would, and its
exit status, JUnit file, state file and leftover processes are checked. The run itself is
the product's (:mod:`mochaos.report.child_pytest`); here are the tests' defaults for it.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mochaos.binaries import control_plane
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.paths import state_dir
from mochaos.report import child_pytest
from mochaos.report.child_pytest import ChildRun, reports_options, run_pytest

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


def child_args(tmp_path: Path, *args: str) -> list[str]:
    """A child pytest's arguments: ``args`` with a JUnit file and reports folder under
    ``tmp_path``, one scenario at a time unless a test asks for workers (a later -n wins)."""
    return [
        "-p", "no:cacheprovider", "-q", "-n", "0", "--time-scale", TIME_SCALE,
        *reports_options(tmp_path / "reports", tmp_path / "junit.xml"), *args,
    ]  # fmt: skip


def pytest_command(tmp_path: Path, *args: str) -> list[str]:
    """``python -m pytest`` with :func:`child_args`, for a test that starts it itself (to
    interrupt or kill it)."""
    return child_pytest.pytest_command(child_args(tmp_path, *args))


def run_child(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
              timeout: float = 600) -> ChildRun:  # fmt: skip
    """Run a child pytest to its end (see :func:`child_args`), its output captured."""
    return run_pytest(
        child_args(tmp_path, *args), reports_dir=tmp_path / "reports",
        junit=tmp_path / "junit.xml", cwd=ROOT, env=env or child_env(), capture=True,
        timeout=timeout,
    )  # fmt: skip


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
