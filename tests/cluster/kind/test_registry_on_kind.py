"""Pulling through the local registry on a real kind cluster: the image is pushed, never
loaded, and the node's containerd pulls it from the registry container (.ci/run's kind step).

Needs a Docker engine kind's nodes can run on and ``MOCHAOS_KIND_E2E=1``, like the other
kind end-to-end tests (tests/operator/test_real_operator_kind.py says why).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from kubernetes import client

from mochaos.cluster.kind.kind_provider import KindProvider
from mochaos.config import REGISTRY_LOCAL
from mochaos.images.registry_image import image_ref
from mochaos.kube import api_client

from support.kind_e2e import containers_labelled, engine_reason, needs_kind_e2e

pytestmark = [
    pytest.mark.e2e,
    needs_kind_e2e,
]
NAME = "mochaos-pull"
POD_TIMEOUT = 180.0


def _node_has(node: str, ref: str) -> bool:
    probe = subprocess.run(["docker", "exec", node, "crictl", "inspecti", ref],
                           capture_output=True, timeout=60)  # fmt: skip
    return probe.returncode == 0


def _wait_running(core: client.CoreV1Api, namespace: str, name: str) -> client.V1Pod:
    deadline = time.monotonic() + POD_TIMEOUT
    while True:
        pod = core.read_namespaced_pod(name, namespace)
        if pod.status.phase == "Running":
            return pod
        assert time.monotonic() < deadline, (pod.status.phase, pod.status.container_statuses)
        time.sleep(1)


def test_a_pod_pulls_its_image_through_the_local_registry(tmp_path: Path) -> None:
    reason = engine_reason()
    if reason:
        pytest.skip(reason)
    ours = ("mochaos.io/role=registry", "io.x-k8s.kind.cluster")
    before = {label: containers_labelled(label) for label in ours}
    provider = KindProvider(name=NAME, registry=REGISTRY_LOCAL, state_dir=tmp_path / "state")
    ref = image_ref()
    try:
        cluster = provider.up()
        node = provider.node_container
        assert not _node_has(node, ref), "the node had the image before any pull"
        provider.load_image(ref)  # pushed to the registry, not loaded into the node
        assert not _node_has(node, ref), "load_image put the image on the node"
        pod = {
            "metadata": {"name": "pulled"},
            "spec": {"containers": [{"name": "r", "image": ref, "imagePullPolicy": "Always"}]},
        }
        with api_client(cluster.kubeconfig, user_agent="mochaos/test",
                        context=cluster.context) as api:  # fmt: skip
            core = client.CoreV1Api(api)
            core.create_namespaced_pod("default", pod)
            _wait_running(core, "default", "pulled")
            events = core.list_namespaced_event(
                "default", field_selector="involvedObject.name=pulled"
            ).items
        pulled = [e.message for e in events if e.reason == "Pulled"]
        assert any("Successfully pulled image" in m for m in pulled), [e.message for e in events]
        assert _node_has(node, ref)
        logs = subprocess.run(["docker", "logs", provider.registry_container],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert "GET /v2/mochaos/registry/manifests/" in logs.stdout + logs.stderr
    finally:
        provider.down()
    # the cluster and its registry are gone with it
    assert {label: containers_labelled(label) for label in ours} == before
