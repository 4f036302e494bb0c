"""The kruise double runs CloneSets as kruise does: kwok pods really appear and disappear."""

from __future__ import annotations

import re

import pytest

from ..waiting import wait_for
from .helpers import (
    COST,
    CS,
    DRAINING,
    GC_TIMEOUT,
    STATE,
    cloneset,
    condition,
    gone,
    holds,
    names,
    pods_of,
    running,
)

pytestmark = pytest.mark.usefixtures("kruise_double", "released_pods")

PRE_DELETE = {"preDelete": {"finalizersHandler": [DRAINING], "markPodNotReady": True}}


def _create(custom, ns: str, body: dict) -> dict:
    return custom.create_namespaced_custom_object(*CS[:2], ns, CS[2], body)


def _get(custom, ns: str, name: str) -> dict:
    return custom.get_namespaced_custom_object(*CS[:2], ns, CS[2], name)


def _patch(custom, ns: str, name: str, patch: dict) -> dict:
    return custom.patch_namespaced_custom_object(*CS[:2], ns, CS[2], name, patch)


def test_create_names_labels_owner_and_gates(custom, core, namespace):
    cs = _create(custom, namespace, cloneset("cn", 3))
    pods = wait_for(
        lambda: (
            (p := running(pods_of(core, namespace, "cn"), 3))
            and all(x.metadata.labels[STATE] == "Normal" for x in p)
            and p
        ),
        what="3 running pods in lifecycle Normal",
    )
    status = wait_for(
        lambda: (
            (s := _get(custom, namespace, "cn").get("status", {})).get("readyReplicas") == 3 and s
        ),
        what="readyReplicas 3",
    )
    revision = status["updateRevision"]
    assert re.fullmatch(r"cn-[bcdfghjklmnpqrstvwxz2456789]+", revision)
    ids = set()
    for pod in pods:
        iid = pod.metadata.labels["apps.kruise.io/cloneset-instance-id"]
        ids.add(iid)
        assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]{5}", iid)
        assert pod.metadata.name == f"cn-{iid}"
        assert pod.metadata.labels["controller-revision-hash"] == revision
        assert pod.metadata.labels["pod-template-hash"] == revision.rsplit("-", 1)[1]
        assert pod.metadata.labels[STATE] == "Normal"
        (ref,) = pod.metadata.owner_references
        assert (ref.kind, ref.name, ref.uid, ref.controller) == (
            "CloneSet",
            "cn",
            cs["metadata"]["uid"],
            True,
        )
        gates = [g.condition_type for g in pod.spec.readiness_gates]
        assert sorted(gates) == ["InPlaceUpdateReady", "KruisePodReady"]
        assert pod.spec.subdomain == "cn-headless" and pod.spec.hostname is None
        assert condition(pod, "KruisePodReady").status == "True"
    assert len(ids) == 3


def test_status_fields(custom, core, namespace):
    _create(custom, namespace, cloneset("cn", 2, minReadySeconds=1))
    status = wait_for(
        lambda: (
            (s := _get(custom, namespace, "cn").get("status", {})).get("availableReplicas") == 2
            and s
        ),
        what="availableReplicas 2 after minReadySeconds",
    )
    assert status["replicas"] == 2
    assert status["readyReplicas"] == 2
    assert status["updatedReplicas"] == 2
    assert status["updatedReadyReplicas"] == 2
    assert status["expectedUpdatedReplicas"] == 2
    assert status["observedGeneration"] == 1
    assert status["currentRevision"] == status["updateRevision"]
    assert status["labelSelector"] == ("matrixorigin.io/component=Test,matrixorigin.io/instance=cn")
    sick = pods_of(core, namespace, "cn")[0].metadata.name
    core.patch_namespaced_pod_status(
        sick,
        namespace,
        {"status": {"conditions": [{"type": "ContainersReady", "status": "False"}]}},
    )
    counts = ("replicas", "readyReplicas", "availableReplicas", "updatedReadyReplicas")
    wait_for(
        lambda: [_get(custom, namespace, "cn")["status"][k] for k in counts] == [2, 1, 1, 1],
        what="an unready pod counted as not ready, not available, not updated-ready",
    )
    _patch(custom, namespace, "cn", {"spec": {"replicas": 3}})
    wait_for(
        lambda: (
            (s := _get(custom, namespace, "cn")["status"])["observedGeneration"] == 2
            and s["replicas"] == 3
        ),
        what="observedGeneration 2 and replicas 3",
    )


def test_scale_up_then_down_in_deletion_cost_order(custom, core, namespace):
    _create(custom, namespace, cloneset("cn", 1))
    wait_for(lambda: running(pods_of(core, namespace, "cn"), 1), what="1 pod")
    _patch(custom, namespace, "cn", {"spec": {"replicas": 4}})
    pods = wait_for(lambda: running(pods_of(core, namespace, "cn"), 4), what="4 pods")
    costs = {pods[0].metadata.name: "-7", pods[1].metadata.name: "30", pods[2].metadata.name: "5"}
    costs[pods[3].metadata.name] = "100"
    for name, cost in costs.items():
        core.patch_namespaced_pod(name, namespace, {"metadata": {"annotations": {COST: cost}}})
    _patch(custom, namespace, "cn", {"spec": {"replicas": 2}})
    left = wait_for(lambda: running(pods_of(core, namespace, "cn"), 2), what="2 pods left")
    assert sorted(names(left)) == sorted([pods[1].metadata.name, pods[3].metadata.name])


def test_pods_to_delete_replaces_the_pod_and_is_truncated(custom, core, namespace):
    _create(custom, namespace, cloneset("cn", 2))
    first = wait_for(lambda: running(pods_of(core, namespace, "cn"), 2), what="2 pods")
    victim = first[0].metadata.name
    _patch(custom, namespace, "cn", {"spec": {"scaleStrategy": {"podsToDelete": [victim]}}})
    now = wait_for(
        lambda: (p := running(pods_of(core, namespace, "cn"), 2)) and victim not in names(p) and p,
        what="the named pod replaced",
    )
    assert first[1].metadata.name in names(now)
    wait_for(
        lambda: not _get(custom, namespace, "cn")["spec"]["scaleStrategy"].get("podsToDelete"),
        what="podsToDelete truncated",
    )


def test_specified_delete_label(custom, core, namespace):
    _create(custom, namespace, cloneset("cn", 2))
    first = wait_for(lambda: running(pods_of(core, namespace, "cn"), 2), what="2 pods")
    victim = first[1].metadata.name
    core.patch_namespaced_pod(
        victim, namespace, {"metadata": {"labels": {"apps.kruise.io/specified-delete": "true"}}}
    )
    wait_for(
        lambda: (p := running(pods_of(core, namespace, "cn"), 2)) and victim not in names(p),
        what="the labelled pod replaced",
    )


def test_pre_delete_hook_holds_the_pod_until_its_finalizer_is_released(custom, core, namespace):
    _create(custom, namespace, cloneset("cn", 2, lifecycle=PRE_DELETE))
    pods = wait_for(lambda: running(pods_of(core, namespace, "cn"), 2), what="2 pods")
    for pod in pods:
        core.patch_namespaced_pod(
            pod.metadata.name,
            namespace,
            {"metadata": {"finalizers": [DRAINING], "annotations": {COST: "0"}}},
        )
    keep, victim = pods[0].metadata.name, pods[1].metadata.name
    core.patch_namespaced_pod(keep, namespace, {"metadata": {"annotations": {COST: "9"}}})
    _patch(custom, namespace, "cn", {"spec": {"replicas": 1}})

    def preparing():
        pod = core.read_namespaced_pod(victim, namespace)
        return pod.metadata.labels.get(STATE) == "PreparingDelete" and pod

    held = wait_for(preparing, what="PreparingDelete")
    kruise_ready = condition(held, "KruisePodReady")
    assert kruise_ready.status == "False"
    assert "preDeleteHook" in kruise_ready.message
    assert condition(held, "Ready").status == "False"
    assert holds(
        lambda: core.read_namespaced_pod(victim, namespace).metadata.deletion_timestamp is None,
        seconds=1.0,
    ), "kruise must not delete a pod its preDelete hook still holds"
    core.patch_namespaced_pod(victim, namespace, {"metadata": {"finalizers": None}})
    wait_for(lambda: gone(lambda: core.read_namespaced_pod(victim, namespace)), what="deletion")
    assert names(pods_of(core, namespace, "cn")) == [keep]
    assert pods_of(core, namespace, "cn")[0].metadata.labels[STATE] == "Normal"


def test_pre_normal_hook_gates_normal(custom, core, namespace):
    lifecycle = {"preNormal": {"labelsHandler": {"example.io/warm": "true"}}}
    _create(custom, namespace, cloneset("cn", 1, lifecycle=lifecycle))
    (pod,) = wait_for(lambda: running(pods_of(core, namespace, "cn"), 1), what="1 pod")
    name = pod.metadata.name
    assert holds(
        lambda: (
            core.read_namespaced_pod(name, namespace).metadata.labels[STATE] == "PreparingNormal"
        ),
        seconds=1.0,
    ), "without the preNormal label the pod must stay PreparingNormal"
    core.patch_namespaced_pod(
        name, namespace, {"metadata": {"labels": {"example.io/warm": "true"}}}
    )
    wait_for(
        lambda: core.read_namespaced_pod(name, namespace).metadata.labels[STATE] == "Normal",
        what="Normal once the hook's label is on",
    )


def test_regret_without_mark_not_ready(custom, core, namespace):
    """A PreparingDelete pod goes back to PreparingNormal (then Normal) when replicas grow
    again and no hook marks pods not ready."""
    lifecycle = {"preDelete": {"finalizersHandler": [DRAINING]}}
    _create(custom, namespace, cloneset("cn", 1, lifecycle=lifecycle))
    (pod,) = wait_for(lambda: running(pods_of(core, namespace, "cn"), 1), what="1 pod")
    name = pod.metadata.name
    core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": [DRAINING]}})
    _patch(custom, namespace, "cn", {"spec": {"replicas": 0}})
    wait_for(
        lambda: (
            core.read_namespaced_pod(name, namespace).metadata.labels[STATE] == "PreparingDelete"
        ),
        what="PreparingDelete",
    )
    _patch(custom, namespace, "cn", {"spec": {"replicas": 1}})
    wait_for(
        lambda: core.read_namespaced_pod(name, namespace).metadata.labels[STATE] == "Normal",
        what="back to Normal",
    )
    assert names(pods_of(core, namespace, "cn")) == [name]
    core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})


def test_garbage_collection_with_the_cloneset(custom, core, namespace):
    _create(custom, namespace, cloneset("cn", 2))
    wait_for(lambda: running(pods_of(core, namespace, "cn"), 2), what="2 pods")
    custom.delete_namespaced_custom_object(*CS[:2], namespace, CS[2], "cn")
    wait_for(
        lambda: not pods_of(core, namespace, "cn", live=False),
        what="pods collected",
        timeout=GC_TIMEOUT,
    )


IN_PLACE = {"inPlaceUpdate": {"finalizersHandler": [DRAINING]}}


def _revision(pod) -> str:
    return pod.metadata.labels["controller-revision-hash"]


def test_in_place_update_through_the_hook(custom, core, namespace):
    strategy = {
        "type": "InPlaceOnly",
        "maxUnavailable": 1,
        "inPlaceUpdateStrategy": {"gracePeriodSeconds": 1},
    }
    _create(custom, namespace, cloneset("cn", 2, lifecycle=IN_PLACE, updateStrategy=strategy))
    pods = wait_for(lambda: running(pods_of(core, namespace, "cn"), 2), what="2 pods")
    uids = {p.metadata.name: p.metadata.uid for p in pods}
    for pod in pods:
        core.patch_namespaced_pod(
            pod.metadata.name, namespace, {"metadata": {"finalizers": [DRAINING]}}
        )
    old = _revision(pods[0])
    template_patch = {
        "spec": {
            "template": {
                "metadata": {"annotations": {"example.io/config": "v2"}},
                "spec": {"containers": [{"name": "main", "image": "mochaos/none:v2"}]},
            }
        }
    }
    _patch(custom, namespace, "cn", template_patch)

    def states() -> dict[str, str]:
        return {p.metadata.name: p.metadata.labels[STATE] for p in pods_of(core, namespace, "cn")}

    first = wait_for(
        lambda: [n for n, s in states().items() if s == "PreparingUpdate"], what="PreparingUpdate"
    )
    assert len(first) == 1, "maxUnavailable 1: one pod at a time"
    (name,) = first
    assert holds(lambda: states()[name] == "PreparingUpdate", seconds=1.0), "the hook holds it"
    core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
    updated = wait_for(
        lambda: (
            (p := core.read_namespaced_pod(name, namespace)).metadata.labels[STATE] == "Updated"
            and p
        ),
        what="Updated once the in-place update (and its grace) is done",
    )
    assert updated.metadata.uid == uids[name], "in place: the same pod"
    assert _revision(updated) != old
    assert updated.metadata.annotations["example.io/config"] == "v2"
    assert updated.spec.containers[0].image == "mochaos/none:v2"
    assert condition(updated, "InPlaceUpdateReady").status == "True"
    core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": [DRAINING]}})
    wait_for(lambda: states()[name] == "Normal", what="Normal once the hook is back")
    other = next(n for n in uids if n != name)
    wait_for(lambda: states()[other] == "PreparingUpdate", what="the second pod's turn")
    core.patch_namespaced_pod(other, namespace, {"metadata": {"finalizers": None}})
    status = wait_for(
        lambda: (s := _get(custom, namespace, "cn")["status"])["updatedReplicas"] == 2 and s,
        what="both pods updated",
    )
    assert status["currentRevision"] == status["updateRevision"] != old
    assert {p.metadata.uid for p in pods_of(core, namespace, "cn")} == set(uids.values())


@pytest.mark.parametrize("kind", ["InPlaceIfPossible", "InPlaceOnly"])
def test_a_change_that_cannot_be_made_in_place(custom, core, namespace, kind):
    _create(custom, namespace, cloneset("cn", 1, updateStrategy={"type": kind}))
    (pod,) = wait_for(lambda: running(pods_of(core, namespace, "cn"), 1), what="1 pod")
    env = [{"name": "MODE", "value": "new"}]
    main = {"name": "main", "image": "mochaos/none", "env": env}
    patch = {"spec": {"template": {"spec": {"containers": [main]}}}}
    _patch(custom, namespace, "cn", patch)
    if kind == "InPlaceIfPossible":
        (new,) = wait_for(
            lambda: (
                (p := running(pods_of(core, namespace, "cn"), 1))
                and p[0].metadata.uid != pod.metadata.uid
                and p
            ),
            what="the pod recreated",
        )
        assert new.spec.containers[0].env[0].value == "new"
        return
    wait_for(
        lambda: any(
            c["type"] == "FailedUpdate"
            for c in _get(custom, namespace, "cn")["status"].get("conditions") or []
        ),
        what="a FailedUpdate condition",
    )
    assert [p.metadata.uid for p in pods_of(core, namespace, "cn")] == [pod.metadata.uid]
