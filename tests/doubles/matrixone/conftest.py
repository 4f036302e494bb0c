"""Fixtures for the MatrixOne double's tests: its binary, our CRDs, a running double.

Until the local provider supervises doubles, each test session (each xdist worker) starts
its own double from :data:`mochaos.doubles.matrixone.SPEC` against the local cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mochaos import runstate
from mochaos.doubles import DoubleContext
from mochaos.doubles.matrixone import SPEC, crds
from mochaos.doubles.matrixone.client import ControlClient
from mochaos.kube import Cluster

# Short HAKeeper timings, so a deleted pod's store times out within seconds.
FAST_FLAGS = ("--cn-store-timeout", "2s", "--hakeeper-check-interval", "500ms")


@dataclass
class RunningDouble:
    """A double started for the tests."""

    ctx: DoubleContext
    process: subprocess.Popen[bytes]
    client: ControlClient


def _wait_healthy(ctx: DoubleContext, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    problem: str | None = "not started"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log = ctx.log_path.read_text(errors="replace")[-2000:]
            raise AssertionError(f"the double exited with {proc.returncode}:\n{log}")
        problem = SPEC.health(ctx)
        if problem is None:
            return
        time.sleep(0.1)
    raise AssertionError(f"the double is not healthy after {timeout}s: {problem}")


@pytest.fixture(scope="session")
def mo_crds(kube) -> None:
    """Our LogSet / DNSet / CNSet CRDs wherever the operator's are not installed."""
    crds.ensure(kube)


@pytest.fixture(scope="session")
def mo_double(
    cluster: Cluster, mo_crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningDouble]:
    """The MatrixOne double running against the local cluster for this session."""
    state = tmp_path_factory.mktemp("matrixone-double")
    ctx = DoubleContext(
        cluster_name=cluster.name,
        kubeconfig=Path(cluster.kubeconfig),
        state_dir=state / "state",
        log_path=state / "double.log",
    )
    ctx.state_dir.mkdir()
    assert SPEC.prepare is not None
    SPEC.prepare(ctx)
    argv = [*SPEC.command(ctx), *FAST_FLAGS]
    with ctx.log_path.open("ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    runstate.register_pid(proc.pid, argv)
    try:
        _wait_healthy(ctx, proc, timeout=30)
        yield RunningDouble(
            ctx=ctx, process=proc, client=ControlClient.from_state_dir(ctx.state_dir)
        )
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        runstate.unregister_pid(proc.pid)
