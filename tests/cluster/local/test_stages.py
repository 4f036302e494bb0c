"""The local cluster's kwok Stages: kwok's defaults from its module, then the kubelet
stand-ins, each checked on a plain pod of the running cluster (no kruise involved).

Red evidence: with ``kubelet_stages.yaml`` emptied (kwok's defaults only), the two
kubelet tests fail — Ready stays True under a False gate, the image stays the old one;
without kwok's volume Stages a claim stays Pending.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from mochaos.binaries import control_plane
from mochaos.binaries import kwok_stages as module_stages
from mochaos.cluster.local import stages as kwok_stages

from support.polling import wait_until

wait = partial(wait_until, timeout=20.0)
GATE = "example.mochaos.io/gate"


def test_defaults_are_kwoks_five_in_kwokctls_order(tmp_path: Path):
    module = tmp_path / "kwok"
    for rel in (*module_stages.DEFAULT_STAGES, *module_stages.VOLUME_STAGES):
        path = module / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({"kind": "Stage", "metadata": {"name": path.stem}}))
    sc = {"kind": "StorageClass", "metadata": {"name": "kwok-volume"}}
    (module / module_stages.STORAGE_CLASS).write_text(yaml.safe_dump(sc))
    out = tmp_path / "defaults.yaml"
    module_stages.write_defaults(module, out)
    names = [d["metadata"]["name"] for d in kwok_stages.documents(out)]
    assert names == [
        "node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete",
        "pod-delete", "pvc-provision", "pv-bind", "pvc-delete", "pv-delete",
        "kubelet-ready-false-on-gates", "kubelet-ready-true-on-gates",
        "kubelet-container-image-follows-spec",
    ]  # fmt: skip
    assert module_stages.storage_class(out) == sc


def test_a_file_that_is_not_a_stage_is_refused(tmp_path: Path):
    for rel in (*module_stages.DEFAULT_STAGES, *module_stages.VOLUME_STAGES):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("kind: ConfigMap\n")
    with pytest.raises(ValueError, match="is not a kwok Stage"):
        module_stages.write_defaults(tmp_path, tmp_path / "out.yaml")


def test_the_built_defaults_are_the_modules_stages():
    c = control_plane.component("kwok-stages")
    if not c.is_built():
        pytest.skip("kwok's Stages not read yet (python -m mochaos cluster build)")
    docs = list(yaml.safe_load_all(c.path(module_stages.DEFAULTS_FILE).read_text()))
    assert [d["metadata"]["name"] for d in docs][:3] == [
        "node-initialize", "node-heartbeat-with-lease", "pod-ready",
    ]  # fmt: skip
    assert all(d["apiVersion"] == "kwok.x-k8s.io/v1alpha1" for d in docs)


def test_every_stand_in_is_commented_as_a_kubelet_stand_in():
    text = kwok_stages.KUBELET_STAGES.read_text()
    for block in text.split("\n---\n"):
        assert "# Kubelet stand-in:" in block, block[:200]


# -- on the running cluster ------------------------------------------------------------------


def _pod(core: client.CoreV1Api, namespace: str, name: str, image: str = "busybox:1.0") -> None:
    core.create_namespaced_pod(namespace, {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": image}],
                 "readinessGates": [{"conditionType": GATE}]},
    })  # fmt: skip


def _condition(core: client.CoreV1Api, namespace: str, name: str, kind: str) -> str | None:
    pod = core.read_namespaced_pod(name, namespace)
    for c in pod.status.conditions or []:
        if c.type == kind:
            return c.status
    return None


def _set_gate(core: client.CoreV1Api, namespace: str, name: str, status: str) -> None:
    patch = {"status": {"conditions": [{"type": GATE, "status": status}]}}
    core.patch_namespaced_pod_status(name, namespace, patch)


def test_ready_follows_a_readiness_gate_both_ways(kube, namespace):
    core = client.CoreV1Api(kube)
    _pod(core, namespace, "gated")
    wait(lambda: _condition(core, namespace, "gated", "Ready") == "True", what="Ready at start")
    _set_gate(core, namespace, "gated", "False")
    wait(lambda: _condition(core, namespace, "gated", "Ready") == "False", what="Ready False")
    pod = core.read_namespaced_pod("gated", namespace)
    ready = next(c for c in pod.status.conditions if c.type == "Ready")
    assert ready.reason == "ReadinessGatesNotReady"
    assert _condition(core, namespace, "gated", "ContainersReady") == "True"
    _set_gate(core, namespace, "gated", "True")
    wait(lambda: _condition(core, namespace, "gated", "Ready") == "True", what="Ready again")
    pod = core.read_namespaced_pod("gated", namespace)
    assert next(c for c in pod.status.conditions if c.type == "Ready").reason is None


def test_a_claim_without_a_class_is_provisioned_and_bound(kube, namespace):
    core = client.CoreV1Api(kube)
    core.create_namespaced_persistent_volume_claim(namespace, {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    })  # fmt: skip

    def bound() -> client.V1PersistentVolumeClaim | None:
        pvc = core.read_namespaced_persistent_volume_claim("data", namespace)
        return pvc if pvc.status.phase == "Bound" else None

    pvc = wait(bound, what="the claim Bound")
    assert pvc.spec.storage_class_name == "kwok-volume", "the default class, set on creation"
    pv = core.read_persistent_volume(pvc.spec.volume_name)
    assert pv.status.phase == "Bound" and pv.spec.claim_ref.name == "data"
    core.delete_namespaced_persistent_volume_claim("data", namespace)

    def volume_gone() -> bool:
        volumes = core.list_persistent_volume().items
        return pv.metadata.name not in {v.metadata.name for v in volumes}

    wait(volume_gone, what="its volume deleted")


def test_a_changed_container_image_is_reported_after_a_restart(kube, namespace):
    core = client.CoreV1Api(kube)
    _pod(core, namespace, "imaged")
    wait(lambda: _condition(core, namespace, "imaged", "Ready") == "True", what="Ready")
    core.patch_namespaced_pod(
        "imaged", namespace, {"spec": {"containers": [{"name": "main", "image": "busybox:2.0"}]}}
    )

    def status() -> client.V1ContainerStatus:
        return core.read_namespaced_pod("imaged", namespace).status.container_statuses[0]

    wait(lambda: status().image == "busybox:2.0", what="the new image in the status")
    now = status()
    assert now.restart_count == 1 and now.started and now.state.running is not None
    assert _condition(core, namespace, "imaged", "Ready") == "True"
