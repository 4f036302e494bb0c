"""Run by the safety tests as a child pytest: a scenario that leaves a finalizer nobody
releases, so the namespace teardown has to wait and then force it; the parent kills this
pytest while it waits.

Not collected by ``pytest tests/``.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from mochaos.scenario import Scenario

pytestmark = pytest.mark.scenario

HOLD = "mochaos.io/test-hold"


def held_pod(name: str) -> dict:
    """A pod whose deletion waits for a finalizer no controller knows."""
    return {
        "metadata": {"name": name, "finalizers": [HOLD]},
        "spec": {"containers": [{"name": "main", "image": "mochaos/none"}]},
    }


def test_a_finalizer_nobody_releases(scenario: Scenario, kube, namespace: str) -> None:
    # Something to judge (a claim, Pending: no pool), or the scenario tested nothing.
    scenario.topology.claim("x", wait_bound=False)
    client.CoreV1Api(kube).create_namespaced_pod(namespace, held_pod("held"))
    scenario.recorder.mark("held pod created")
