"""The embedded local cluster behaves like a real one (against the real apiserver)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.binaries import control_plane
from mochaos.cluster.environment import Environment
from mochaos.cluster.local import attached
from mochaos.cluster.local.attached import Attached
from mochaos.cluster.local.cluster_dir import COMPONENTS
from mochaos.cluster.local.components import is_our_process
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.ctrl.listwatch import Event, ListWatch
from mochaos.ctrl.rest import Kind, Kube
from mochaos.procs import start_time

from support.polling import wait_until

PROBE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "probes.test.mochaos.io"},
    "spec": {
        "group": "test.mochaos.io",
        "scope": "Namespaced",
        "names": {
            "kind": "Probe",
            "plural": "probes",
            "singular": "probe",
            "listKind": "ProbeList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def probes(kube) -> client.CustomObjectsApi:
    """The Probe CRD installed (idempotent) and a client for it."""
    ext = client.ApiextensionsV1Api(kube)
    ext.patch_custom_resource_definition(
        "probes.test.mochaos.io", PROBE_CRD, field_manager="mochaos-test", force=True,
        _content_type="application/apply-patch+yaml",
    )  # fmt: skip

    def established():
        crd = ext.read_custom_resource_definition("probes.test.mochaos.io")
        return any(
            c.type == "Established" and c.status == "True" for c in crd.status.conditions or []
        )

    wait_until(established, timeout=20, what="Probe CRD Established")
    return client.CustomObjectsApi(kube)


PROBES = Kind("Probe", "probes", "test.mochaos.io", "v1")


def _watcher(kube, namespace: str, seen: list[Event], stop: threading.Event) -> ListWatch:
    rest = Kube(kube.configuration, user_agent="mochaos/test")
    return ListWatch(rest, PROBES, namespace, handle=seen.append, stop=stop)


def _probe(name: str, **meta) -> dict:
    return {"apiVersion": "test.mochaos.io/v1", "kind": "Probe",
            "metadata": {"name": name, **meta}, "spec": {"n": 1}}  # fmt: skip


def test_status_subresource_and_finalizer(probes, namespace):
    args = ("test.mochaos.io", "v1", namespace, "probes")
    probes.create_namespaced_custom_object(*args, _probe("p1", finalizers=["mochaos.io/hold"]))
    status = {"status": {"phase": "Held"}}
    probes.patch_namespaced_custom_object_status(*args, "p1", status)
    obj = probes.get_namespaced_custom_object(*args, "p1")
    assert obj["status"] == {"phase": "Held"}

    probes.delete_namespaced_custom_object(*args, "p1")
    time.sleep(0.5)
    held = probes.get_namespaced_custom_object(*args, "p1")
    assert held["metadata"]["deletionTimestamp"], "finalizer should keep the object"

    probes.patch_namespaced_custom_object(*args, "p1", {"metadata": {"finalizers": None}})

    def gone():
        try:
            probes.get_namespaced_custom_object(*args, "p1")
        except ApiException as err:
            return err.status == 404
        return False

    wait_until(gone, timeout=10, what="deletion after finalizer removal")


def test_stale_resource_version_conflicts(probes, namespace):
    args = ("test.mochaos.io", "v1", namespace, "probes")
    created = probes.create_namespaced_custom_object(*args, _probe("p2"))
    probes.patch_namespaced_custom_object(*args, "p2", {"spec": {"n": 2}})
    stale = dict(created, spec={"n": 3})
    with pytest.raises(ApiException) as err:
        probes.replace_namespaced_custom_object(*args, "p2", stale)
    assert err.value.status == 409


def _pod(name: str) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "main", "image": "mochaos/none"}],
            "nodeSelector": {"type": "kwok"},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
        },
    }


def test_pod_runs_on_kwok_node_and_disappears(kube, namespace):
    core = client.CoreV1Api(kube)
    core.create_namespaced_pod(namespace, _pod("runner"))
    running = wait_until(
        lambda: (
            (p := core.read_namespaced_pod("runner", namespace)).status.phase == "Running" and p
        ),
        timeout=30,
        what="pod Running",
    )
    assert running.spec.node_name.startswith("kwok-node-")
    core.delete_namespaced_pod("runner", namespace)

    def gone():
        try:
            core.read_namespaced_pod("runner", namespace)
        except ApiException as err:
            return err.status == 404
        return False

    wait_until(gone, timeout=10, what="pod deletion")


def test_namespace_deletion_and_garbage_collection(kube, cluster):
    core = client.CoreV1Api(kube)
    ns = f"mc-gc-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
               "uid": owner.metadata.uid}  # fmt: skip
        core.create_namespaced_config_map(
            ns, {"metadata": {"name": "dependent", "ownerReferences": [ref]}}
        )
        core.delete_namespaced_config_map("owner", ns)

        def dependent_gone():
            names = [c.metadata.name for c in core.list_namespaced_config_map(ns).items]
            return "dependent" not in names

        wait_until(dependent_gone, timeout=30, what="garbage collection of the dependent")
    finally:
        core.delete_namespace(ns)

    def ns_gone():
        try:
            core.read_namespace(ns)
        except ApiException as err:
            return err.status == 404
        return False

    wait_until(ns_gone, timeout=60, what="namespace deletion")


def test_watch_sees_changes_in_resource_version_order(probes, kube, namespace):
    seen: list[Event] = []
    stop = threading.Event()
    watcher = _watcher(kube, namespace, seen, stop)
    watcher.initial_list()
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    args = ("test.mochaos.io", "v1", namespace, "probes")
    probes.create_namespaced_custom_object(*args, _probe("w"))
    probes.patch_namespaced_custom_object(*args, "w", {"spec": {"n": 5}})
    probes.delete_namespaced_custom_object(*args, "w")
    wait_until(lambda: len(seen) >= 3, timeout=10, what="three watch events")
    stop.set()
    watcher.stop()
    thread.join(timeout=5)
    assert not thread.is_alive(), "stop() did not end a watch blocked on its read"
    assert [e.type for e in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert [e.rv for e in seen] == sorted(e.rv for e in seen)


@pytest.mark.skipif(not control_plane.all_built(), reason="local binaries not built")
def test_up_twice_reuses_and_down_leaves_nothing(tmp_path):
    provider = LocalProvider(name=f"mc-life-{uuid.uuid4().hex[:4]}")
    left = None
    try:
        first = provider.up()
        pids = provider.running_pids()
        assert len(pids) == 5, pids
        # Started as for the reference model: nothing beside the control plane.
        assert [s.name for s in provider.supervision.table()] == list(COMPONENTS)
        assert provider.environment == Environment()
        again = provider.up()
        assert again == first
        assert provider.running_pids() == pids, "a healthy cluster must be reused, not restarted"
        # What a pytest process killed midway leaves running for the cluster (a webhook host).
        argv = [sys.executable, "-c", "import time; time.sleep(120)"]
        left = subprocess.Popen(argv, start_new_session=True)
        # Recorded as the framework records what it starts (pid, argv, start time).
        item = Attached("left", pid=left.pid, argv=argv, started=start_time(left.pid))
        attached.attach(provider.cluster_dir, item)
    finally:
        provider.down()
    assert left is not None
    try:
        left.wait(timeout=15)
    except subprocess.TimeoutExpired:
        left.kill()
        raise AssertionError("down() left the attached process running") from None
    assert provider.running_pids() == {}
    for component, pid in pids.items():
        assert not is_our_process(pid, component), f"{component} (pid {pid}) still running"
    assert not provider.cluster_dir.exists()


def test_watch_from_a_compacted_version_relists_without_losing_changes(probes, kube, namespace):
    """A 410 Gone (the version is too old) makes the watcher relist and report the difference."""
    args = ("test.mochaos.io", "v1", namespace, "probes")
    seen: list[Event] = []
    stop = threading.Event()
    watcher = _watcher(kube, namespace, seen, stop)
    watcher.initial_list()
    probes.create_namespaced_custom_object(*args, _probe("kept"))
    probes.create_namespaced_custom_object(*args, _probe("gone"))
    stale = {"metadata": {"name": "", "resourceVersion": "1"}}
    # as if we had seen "gone" long ago, and "vanished", deleted while we were away
    watcher.known["gone"] = {"metadata": {**stale["metadata"], "name": "gone"}}
    watcher.known["vanished"] = {"metadata": {**stale["metadata"], "name": "vanished"}}
    watcher.last_rv = 1  # far older than the apiserver's watch window: 410 Gone
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    wait_until(lambda: watcher.relists >= 1 and len(seen) >= 3, timeout=15, what="a relist")
    stop.set()
    watcher.stop()
    thread.join(timeout=5)
    events = {(e.type, e.last["metadata"]["name"]) for e in seen}
    assert {("ADDED", "kept"), ("MODIFIED", "gone"), ("DELETED", "vanished")} <= events
