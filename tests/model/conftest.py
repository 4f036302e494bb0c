"""Fixtures of the model's cluster tests, on top of the plugin's ``cluster`` and ``namespace``.

``scene`` writes and reads the test namespace straight from the apiserver; ``run_model``
starts ``python -m mochaos.model`` for it (stopped at teardown, before the namespace goes).
The CRDs are applied once per session with server-side apply when the cluster lacks them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mochaos.crds import install, own_crds
from mochaos.ctrl.rest import Kube
from mochaos.kube import Cluster

from .scene import SCALE, ModelProcess, Scene, start_model


@pytest.fixture(scope="session")
def model_api(cluster: Cluster) -> Kube:
    """An API client for the tests' own writes, with the CRDs in place."""
    api = Kube.from_kubeconfig(str(cluster.kubeconfig), user_agent="mochaos/test-model")
    install(cluster, own_crds())  # as the model target does (replaces a real operator's)
    return api


@pytest.fixture
def scene(model_api: Kube, namespace: str) -> Scene:
    """The test namespace, seen through the API."""
    return Scene(model_api, namespace, scale=SCALE)


@pytest.fixture
def run_model(
    cluster: Cluster, namespace: str, tmp_path: Path, model_api: Kube
) -> Iterator[Callable[..., ModelProcess]]:
    """Start the model (``run_model(profile, *extra_args)``) for the test namespace."""
    started: list[ModelProcess] = []

    def start(profile: str, *extra: str) -> ModelProcess:
        model = start_model(
            kubeconfig=cluster.kubeconfig,
            namespace=namespace,
            profile=profile,
            workdir=tmp_path,
            extra=extra,
        )
        started.append(model)
        return model

    yield start
    for model in started:
        model.stop()
