"""The kruise double runs Advanced StatefulSets as kruise does: ordinals, reserveOrdinals,
identity, PVCs bound by the volume stand-in, scale-in order, status, garbage collection."""

from __future__ import annotations

import pytest

from ..waiting import wait_for
from .helpers import (
    DRAINING,
    GC_TIMEOUT,
    STATE,
    STS,
    first_seen,
    gone,
    holds,
    names,
    pod_events,
    pods_of,
    running,
    statefulset,
)

pytestmark = pytest.mark.usefixtures("kruise_double", "released_pods")

VOLUME = {
    "metadata": {"name": "mo-data"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Mi"}}},
}
DELETE_BOTH = {"whenDeleted": "Delete", "whenScaled": "Delete"}


def _create(custom, ns: str, body: dict) -> dict:
    return custom.create_namespaced_custom_object(*STS[:2], ns, STS[2], body)


def _get(custom, ns: str, name: str) -> dict:
    return custom.get_namespaced_custom_object(*STS[:2], ns, STS[2], name)


def _patch(custom, ns: str, name: str, patch: dict) -> dict:
    return custom.patch_namespaced_custom_object(*STS[:2], ns, STS[2], name, patch)


def test_ordinals_identity_labels_and_status(custom, core, namespace):
    sts = _create(custom, namespace, statefulset("log", 3))
    pods = wait_for(lambda: running(pods_of(core, namespace, "log"), 3), what="3 pods")
    assert names(pods) == ["log-0", "log-1", "log-2"]
    status = wait_for(
        lambda: (
            (s := _get(custom, namespace, "log").get("status", {})).get("readyReplicas") == 3 and s
        ),
        what="readyReplicas 3",
    )
    for pod in pods:
        name = pod.metadata.name
        assert pod.spec.hostname == name
        assert pod.spec.subdomain == "log-headless"
        assert pod.metadata.labels["statefulset.kubernetes.io/pod-name"] == name
        assert pod.metadata.labels["controller-revision-hash"] == status["updateRevision"]
        assert pod.metadata.labels[STATE] == "Normal"
        (ref,) = pod.metadata.owner_references
        assert (ref.kind, ref.uid, ref.controller) == ("StatefulSet", sts["metadata"]["uid"], True)
    assert status["replicas"] == status["updatedReplicas"] == status["currentReplicas"] == 3
    assert status["updatedReadyReplicas"] == status["availableReplicas"] == 3
    assert status["observedGeneration"] == 1
    assert status["currentRevision"] == status["updateRevision"]
    assert status["labelSelector"] == "matrixorigin.io/component=Test,matrixorigin.io/instance=log"
    core.patch_namespaced_pod_status(
        "log-1",
        namespace,
        {"status": {"conditions": [{"type": "ContainersReady", "status": "False"}]}},
    )
    counts = ("replicas", "readyReplicas", "availableReplicas", "updatedReadyReplicas")
    wait_for(
        lambda: [_get(custom, namespace, "log")["status"][k] for k in counts] == [3, 2, 2, 2],
        what="an unready pod counted as not ready, not available, not updated-ready",
    )


def test_reserve_ordinals_skip_and_condemn(custom, core, namespace):
    _create(custom, namespace, statefulset("log", 3, reserveOrdinals=[1]))
    pods = wait_for(lambda: running(pods_of(core, namespace, "log"), 3), what="3 pods")
    assert names(pods) == ["log-0", "log-2", "log-3"]
    _patch(custom, namespace, "log", {"spec": {"reserveOrdinals": [1, 2]}})
    wait_for(
        lambda: (
            names(running(pods_of(core, namespace, "log"), 3) or []) == ["log-0", "log-3", "log-4"]
        ),
        what="log-2 replaced by log-4",
    )


def test_scale_in_removes_the_highest_ordinal_first(kube, custom, core, namespace):
    _create(custom, namespace, statefulset("log", 4))
    wait_for(lambda: running(pods_of(core, namespace, "log"), 4), what="4 pods")

    def removed(etype: str, pod: dict) -> bool:
        return etype == "DELETED" or bool(pod["metadata"].get("deletionTimestamp"))

    with pod_events(kube, namespace) as events:
        _patch(custom, namespace, "log", {"spec": {"replicas": 2}})
        order = wait_for(
            lambda: len(first_seen(events, removed)) == 2 and first_seen(events, removed),
            what="two pods removed",
        )
    assert order == ["log-3", "log-2"]
    assert names(pods_of(core, namespace, "log", live=False)) == ["log-0", "log-1"]


@pytest.mark.parametrize("policy, created", [("OrderedReady", 1), ("Parallel", 2)])
def test_pod_management_policy(custom, core, namespace, policy, created):
    """Pods that can never be scheduled: OrderedReady waits on log-0, Parallel does not."""
    body = statefulset("log", 2, podManagementPolicy=policy)
    body["spec"]["template"]["spec"]["nodeSelector"] = {"mochaos.io/no-such-node": "x"}
    _create(custom, namespace, body)
    wait_for(lambda: len(pods_of(core, namespace, "log")) == created, what=f"{created} pod(s)")
    assert holds(lambda: len(pods_of(core, namespace, "log")) == created, seconds=1.0)
    assert names(pods_of(core, namespace, "log"))[0] == "log-0"


def test_volume_claims_bound_and_collected(custom, core, namespace):
    _create(
        custom,
        namespace,
        statefulset(
            "log",
            2,
            volumeClaimTemplates=[VOLUME],
            persistentVolumeClaimRetentionPolicy=DELETE_BOTH,
        ),
    )
    pods = wait_for(lambda: running(pods_of(core, namespace, "log"), 2), what="2 pods scheduled")
    claims = {
        v.name: v.persistent_volume_claim.claim_name
        for v in pods[0].spec.volumes
        if v.persistent_volume_claim
    }
    assert claims == {"mo-data": "mo-data-log-0"}

    def bound():
        pvcs = core.list_namespaced_persistent_volume_claim(namespace).items
        return sorted(p.metadata.name for p in pvcs if p.status.phase == "Bound")

    assert wait_for(bound, what="PVCs bound") == ["mo-data-log-0", "mo-data-log-1"]
    _patch(custom, namespace, "log", {"spec": {"replicas": 1}})
    wait_for(
        lambda: bound() == ["mo-data-log-0"],
        what="the scaled-away pod's PVC collected",
        timeout=GC_TIMEOUT,
    )
    custom.delete_namespaced_custom_object(*STS[:2], namespace, STS[2], "log")
    wait_for(
        lambda: (
            not core.list_namespaced_persistent_volume_claim(namespace).items
            and not pods_of(core, namespace, "log", live=False)
        ),
        what="pods and PVCs collected with the set",
        timeout=GC_TIMEOUT,
    )


def test_pre_delete_hook_holds_a_condemned_pod(custom, core, namespace):
    lifecycle = {"preDelete": {"finalizersHandler": [DRAINING]}}
    _create(custom, namespace, statefulset("log", 2, lifecycle=lifecycle))
    wait_for(lambda: running(pods_of(core, namespace, "log"), 2), what="2 pods")
    core.patch_namespaced_pod("log-1", namespace, {"metadata": {"finalizers": [DRAINING]}})
    _patch(custom, namespace, "log", {"spec": {"replicas": 1}})
    wait_for(
        lambda: (
            core.read_namespaced_pod("log-1", namespace).metadata.labels[STATE] == "PreparingDelete"
        ),
        what="PreparingDelete",
    )
    assert holds(
        lambda: core.read_namespaced_pod("log-1", namespace).metadata.deletion_timestamp is None,
        seconds=1.0,
    )
    core.patch_namespaced_pod("log-1", namespace, {"metadata": {"finalizers": None}})
    wait_for(lambda: gone(lambda: core.read_namespaced_pod("log-1", namespace)), what="deletion")


def test_failed_pod_is_recreated_and_orphan_adopted(custom, core, namespace):
    _create(custom, namespace, statefulset("log", 1))
    (pod,) = wait_for(lambda: running(pods_of(core, namespace, "log"), 1), what="log-0")
    core.patch_namespaced_pod_status("log-0", namespace, {"status": {"phase": "Failed"}})
    wait_for(
        lambda: (
            (p := running(pods_of(core, namespace, "log"), 1))
            and p[0].metadata.uid != pod.metadata.uid
        ),
        what="a new log-0",
    )
    custom.delete_namespaced_custom_object(
        *STS[:2], namespace, STS[2], "log", body={"propagationPolicy": "Orphan"}
    )
    wait_for(
        lambda: (
            not (pods_of(core, namespace, "log")[0].metadata.owner_references or [])
            and gone(lambda: _get(custom, namespace, "log"))
        ),
        what="log-0 orphaned and the set gone",
    )
    again = _create(custom, namespace, statefulset("log", 1))
    adopted = wait_for(
        lambda: (
            (p := pods_of(core, namespace, "log"))
            and (p[0].metadata.owner_references or [None])[0]
            and p[0]
        ),
        what="log-0 adopted",
    )
    assert adopted.metadata.owner_references[0].uid == again["metadata"]["uid"]


def test_rolling_update_in_place_then_by_recreation(kube, custom, core, namespace):
    _create(custom, namespace, statefulset("log", 3))
    pods = wait_for(lambda: running(pods_of(core, namespace, "log"), 3), what="3 pods")
    uids = {p.metadata.name: p.metadata.uid for p in pods}
    meta = {"metadata": {"annotations": {"example.io/config": "v2"}}}
    _patch(custom, namespace, "log", {"spec": {"template": meta}})
    done = wait_for(
        lambda: (
            (p := running(pods_of(core, namespace, "log"), 3))
            and all((x.metadata.annotations or {}).get("example.io/config") == "v2" for x in p)
            and p
        ),
        what="annotation rolled out in place",
    )
    assert {p.metadata.name: p.metadata.uid for p in done} == uids
    status = wait_for(
        lambda: (s := _get(custom, namespace, "log")["status"])["updatedReplicas"] == 3 and s,
        what="updatedReplicas 3",
    )
    assert status["currentRevision"] == status["updateRevision"]
    env = [{"name": "MODE", "value": "new"}]
    main = {"name": "main", "image": "mochaos/none", "env": env}
    patch = {"spec": {"template": {"spec": {"containers": [main]}}}}

    def recreated(etype: str, pod: dict) -> bool:
        return etype == "ADDED" and pod["metadata"]["uid"] not in uids.values()

    with pod_events(kube, namespace) as events:
        _patch(custom, namespace, "log", patch)
        order = wait_for(
            lambda: len(first_seen(events, recreated)) == 3 and first_seen(events, recreated),
            what="all three recreated",
        )
    assert order == ["log-2", "log-1", "log-0"]
