"""The kruise double for these tests: one per local cluster, shared by every xdist worker.

Until the local provider starts the doubles itself, the first worker to get here starts it
through its DoubleSpec (prepare, then the command, detached, logging into its state
folder) under a file lock; everyone else finds it healthy and reuses it. It stays up for
the next run like the cluster does, and stops by itself when ``cluster down`` removes the
cluster's state.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock
from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.doubles import DoubleContext
from mochaos.doubles.kruise import SPEC
from mochaos.errors import InfraError
from mochaos.types import Cluster

START_TIMEOUT = 60.0


def double_context(cluster: Cluster) -> DoubleContext:
    """Where the double of a local cluster keeps its state and log."""
    state_dir = Path(cluster.kubeconfig).parent / "doubles" / "kruise"
    return DoubleContext(
        cluster_name=cluster.name,
        kubeconfig=Path(cluster.kubeconfig),
        state_dir=state_dir,
        log_path=state_dir / "kruise.log",
    )


@pytest.fixture(scope="session")
def kruise_double(cluster: Cluster) -> DoubleContext:
    """The running kruise double of the local cluster (started when absent)."""
    if cluster.provider != "local":
        pytest.skip("the kruise double serves the embedded local cluster")
    ctx = double_context(cluster)
    ctx.state_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(ctx.state_dir.parent / "kruise.lock")):
        if SPEC.health(ctx) is None:
            return ctx
        assert SPEC.prepare is not None
        SPEC.prepare(ctx)
        with ctx.log_path.open("ab") as log:
            subprocess.Popen(
                SPEC.command(ctx), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + START_TIMEOUT
        while (problem := SPEC.health(ctx)) is not None:
            if time.monotonic() > deadline:
                raise InfraError(
                    f"kruise double not healthy: {problem}", hint=f"see {ctx.log_path}"
                )
            time.sleep(0.2)
    return ctx


@pytest.fixture
def core(kube) -> client.CoreV1Api:
    """CoreV1Api on the test's client."""
    return client.CoreV1Api(kube)


@pytest.fixture
def custom(kube) -> client.CustomObjectsApi:
    """CustomObjectsApi on the test's client."""
    return client.CustomObjectsApi(kube)


@pytest.fixture
def released_pods(core: client.CoreV1Api, namespace: str) -> Iterator[None]:
    """After the test, strip the finalizers tests put on pods, so the namespace can go even
    when a test stopped half-way."""
    yield
    for pod in core.list_namespaced_pod(namespace).items:
        if pod.metadata.finalizers:
            with contextlib.suppress(ApiException):
                core.patch_namespaced_pod(
                    pod.metadata.name, namespace, {"metadata": {"finalizers": None}}
                )
