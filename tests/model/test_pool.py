"""CNPool controller: the pods it creates and the order in which it scales idle pods in;
on a real cluster, that it keeps maxIdle idle pods and gives back surplus ones.
"""

from __future__ import annotations

from functools import cmp_to_key

from mochaos.ctrl.finalizers import DRAINING_FINALIZER, PREPARING_DELETE
from mochaos.ctrl.objects import DRAINING_START_ANNOTATION, KRUISE_STATE_LABEL
from mochaos.ctrl.rest import PODS, POOLS
from mochaos.model.pool import pod_for_pool, pool_deletion_order

from .fakes import pod
from .scene import PHASE, annotations, labels


def pool_pod(name: str, phase: str, created: str, claimed: bool = False) -> dict:
    p = pod(name, **{PHASE: phase})
    if claimed:
        p["metadata"]["labels"]["pool.matrixorigin.io/claimed-by"] = "x"
    p["metadata"]["creationTimestamp"] = created
    return p


def test_deletion_order_by_phase_then_claimed_then_newer() -> None:
    pods = [
        pool_pod("idle-old", "Idle", "2026-01-01T00:00:00Z"),
        pool_pod("idle-new", "Idle", "2026-01-01T00:00:09Z"),
        pool_pod("unknown", "Unknown", "2026-01-01T00:00:00Z"),
        pool_pod("unknown-claimed", "Unknown", "2026-01-01T00:00:00Z", claimed=True),
        pool_pod("terminating", "Terminating", "2026-01-01T00:00:00Z"),
        pool_pod("bound", "Bound", "2026-01-01T00:00:00Z"),
    ]
    names = [p["metadata"]["name"] for p in sorted(pods, key=cmp_to_key(pool_deletion_order))]
    assert names == ["terminating", "unknown", "unknown-claimed", "idle-new", "idle-old", "bound"]


def test_pod_of_a_pool() -> None:
    pool = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {"podLabels": {"mochaos.io/pool": "p", PHASE: "Idle"}},
    }
    made = pod_for_pool(pool, "p-abcde")
    assert labels(made) == {
        "mochaos.io/pool": "p",
        PHASE: "Unknown",
        "pool.matrixorigin.io/pool-name": "p",
        "lifecycle.apps.kruise.io/state": "Normal",
        "matrixorigin.io/component": "CNSet",
        "matrixorigin.io/instance": "p",
        "matrixorigin.io/namespace": "ns",
    }
    owner = made["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "CNPool",
        "p",
        "u",
        True,
    )
    assert made["spec"]["nodeSelector"] == {"type": "kwok"}
    assert made["spec"]["tolerations"] == [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}]
    assert "finalizers" not in made["metadata"]


def test_a_pool_pod_with_an_image_runs_on_real_nodes() -> None:
    pool = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {}}
    made = pod_for_pool(pool, "p-abcde", image="registry.k8s.io/pause:3.10")
    (container,) = made["spec"]["containers"]
    assert (container["image"], container["imagePullPolicy"]) == (
        "registry.k8s.io/pause:3.10",
        "Never",
    )
    assert "nodeSelector" not in made["spec"] and "tolerations" not in made["spec"]


# ================================================================ on a real cluster


def live_pods(scene) -> list[dict]:
    return [p for p in scene.pods() if not p["metadata"].get("deletionTimestamp")]


def test_max_idle_option_overrides_the_pool(run_model, scene) -> None:
    run_model("upstream", "--max-idle", "3")
    scene.create_pool("p", max_idle=1)
    pods = scene.idle_count(3)
    assert all(p["spec"]["nodeName"].startswith("kwok-node") for p in pods)
    assert all(p["metadata"]["name"].startswith("p-") for p in pods)
    scene.holds("no more than 3 pods", lambda: len(live_pods(scene)) == 3, op_seconds=20)


def test_surplus_idle_pods_are_terminated_and_deleted(run_model, scene) -> None:
    model = run_model("upstream")
    scene.create_pool("p", max_idle=3)
    scene.idle_count(3)
    scene.api.merge_patch(
        POOLS, scene.namespace, "p", {"spec": {"strategy": {"scaleStrategy": {"maxIdle": 1}}}}
    )
    scene.wait("one pod left", lambda: len(live_pods(scene)) == 1, op_seconds=30)
    assert sum(r["deleted"] for r in model.lines("scale-in CN Pool complete", name="p")) == 2


def test_the_first_pods_go_idle_without_waiting_for_a_resync(run_model, scene) -> None:
    """The store cache is built at the first lookup, after the pods run (model-pacing.md):
    the pool's first pods are Idle well before the store's 30 s resync."""
    run_model("upstream")
    scene.create_pool("p", max_idle=2)
    scene.idle_count(2, op_seconds=15)


def test_a_pod_started_after_the_cache_was_filled_waits_for_a_refill(run_model, scene) -> None:
    """A store registered after the cache's fill is not seen before the next one (15 s),
    and its pod is looked at again only at the store's 30 s resync."""
    run_model("upstream")
    scene.create_pool("p", max_idle=1)
    (first,) = scene.idle_count(1, op_seconds=15)
    scene.create_claim("x", pool="p")
    scene.bound_claim("x")
    refill = scene.wait(
        "the pool starts a pod to keep one idle",
        lambda: next(
            (p for p in live_pods(scene) if p["metadata"]["name"] != first["metadata"]["name"]),
            None,
        ),
        op_seconds=10,
    )
    name = refill["metadata"]["name"]

    def unknown() -> bool:
        pods = {p["metadata"]["name"]: p for p in scene.pods()}
        return labels(pods.get(name)).get(PHASE) == "Unknown"

    scene.holds("the new pod stays Unknown until the cache has its store", unknown, op_seconds=10)
    scene.idle_count(1, op_seconds=45)


# ------------------------------------------------- OpenKruise's pre-delete hold, as played


def set_max_idle(scene, n: int) -> None:
    scene.api.merge_patch(
        POOLS, scene.namespace, "p", {"spec": {"strategy": {"scaleStrategy": {"maxIdle": n}}}}
    )


def held_pods(scene) -> list[dict]:
    return [p for p in live_pods(scene) if labels(p).get(KRUISE_STATE_LABEL) == PREPARING_DELETE]


def test_a_scaled_in_pod_is_held_through_its_drain(run_model, scene) -> None:
    """The pool marks a surplus Idle pod Terminating; the CloneSet holds it in
    PreparingDelete behind the cn-draining hook while the store controller drains it (the
    minimum delay at least), then deletes it once the hook is removed."""
    model = run_model("upstream")
    scene.create_pool("p", max_idle=2)
    scene.idle_count(2)
    set_max_idle(scene, 1)
    (held,) = scene.wait("a pod held in PreparingDelete", lambda: held_pods(scene), op_seconds=30)
    name = held["metadata"]["name"]
    assert labels(held).get(PHASE) == "Terminating"
    assert DRAINING_FINALIZER in held["metadata"]["finalizers"]
    scene.wait(
        "the drain's start is annotated",
        lambda: DRAINING_START_ANNOTATION in annotations(scene.pod(name)),
        op_seconds=30,
    )
    scene.holds("the pod stays during the minimum delay", lambda: scene.pod(name), op_seconds=10)
    scene.wait("the drained pod is deleted", lambda: scene.pod(name) is None, op_seconds=60)
    assert model.lines("set CN store draining", name=name)


def test_the_pool_is_one_pod_short_while_a_pod_drains(run_model, scene) -> None:
    """No early replacement: a held pod counts against the CloneSet's replicas, so a pool
    that wants its pod back gets a new one only once the held pod is gone
    (docs/model-vs-real.md, race)."""
    run_model("upstream")
    scene.create_pool("p", max_idle=2)
    scene.idle_count(2)
    set_max_idle(scene, 1)
    (held,) = scene.wait("a pod held in PreparingDelete", lambda: held_pods(scene), op_seconds=30)
    set_max_idle(scene, 2)
    scene.holds(
        "no replacement while the pod is held",
        lambda: len(live_pods(scene)) == 2 or held_pods(scene) == [],
        op_seconds=10,
    )
    scene.wait(
        "the held pod gone, a new one is made",
        lambda: scene.pod(held["metadata"]["name"]) is None and len(live_pods(scene)) == 2,
        op_seconds=60,
    )
    scene.idle_count(2, op_seconds=60)


def test_a_deleted_pod_loses_its_hook_through_on_deleted(run_model, scene) -> None:
    """kwok removes no finalizer: the store controller's OnDeleted removes cn-draining from a
    pod deleted by someone else, so it goes."""
    model = run_model("upstream")
    scene.create_pool("p", max_idle=1)
    (idle,) = scene.idle_count(1)
    name = idle["metadata"]["name"]
    scene.wait(
        "the store puts the hook on the running pod",
        lambda: DRAINING_FINALIZER in (scene.pod(name)["metadata"].get("finalizers") or []),
        op_seconds=30,
    )
    scene.delete(PODS, name)
    scene.wait("the pod is gone", lambda: scene.pod(name) is None, op_seconds=30)
    assert model.lines("call HAKeeper to remove CN store", name=name)
