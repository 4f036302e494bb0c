"""cnstore: which pod events it follows; on a real cluster, that a drain waits for the
sessions in the score annotation and gives up after the drain timeout.
"""

from __future__ import annotations

import copy
import time

import pytest

from mochaos.ctrl.finalizers import DRAINING_FINALIZER, PREPARING_DELETE
from mochaos.ctrl.objects import DRAINING_START_ANNOTATION, KRUISE_STATE_LABEL
from mochaos.ctrl.rest import PODS, Conflict
from mochaos.model.runtime.context import ReSync
from mochaos.model.store import DELETION_COST, StoreActor, starting, wants_pod_event
from mochaos.model.timing import Timing

from .fakes import FakeClient, ListSink, context, pod
from .scene import PHASE, annotations, labels

CN = {"matrixorigin.io/component": "CNSet"}


def cn_pod(**annotations: str) -> dict:
    p = pod("p", **CN)
    p["metadata"]["annotations"] = dict(annotations)
    return p


def test_only_cn_pods() -> None:
    assert wants_pod_event("ADDED", None, cn_pod())
    assert not wants_pod_event("ADDED", None, pod("p"))
    assert wants_pod_event("DELETED", cn_pod(), None)


def test_label_and_deletion_changes_pass_status_changes_do_not() -> None:
    old = cn_pod()
    relabelled = copy.deepcopy(old)
    relabelled["metadata"]["labels"]["x"] = "y"
    assert wants_pod_event("MODIFIED", old, relabelled)
    status = copy.deepcopy(old)
    status["status"]["phase"] = "Failed"
    assert not wants_pod_event("MODIFIED", old, status)
    dying = copy.deepcopy(old)
    dying["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert wants_pod_event("MODIFIED", old, dying)


def test_stats_annotations_and_removals_do_not_pass() -> None:
    old = cn_pod(keep="1")
    stats = cn_pod(
        keep="1",
        **{"matrixorigin.io/score": "{}", "controller.kubernetes.io/pod-deletion-cost": "3"},
    )
    assert not wants_pod_event("MODIFIED", old, stats)
    assert not wants_pod_event("MODIFIED", old, cn_pod())
    assert wants_pod_event("MODIFIED", old, cn_pod(keep="2"))
    assert wants_pod_event("MODIFIED", old, cn_pod(keep="1", extra="1"))


def started(p: dict, *, running: bool, unschedulable: bool = False) -> dict:
    state = {"running": {"startedAt": "2026-01-01T00:00:00Z"}} if running else {"waiting": {}}
    p["status"] = {"containerStatuses": [{"name": "main", "state": state}]}
    if unschedulable:
        p["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        ]
    return p


def test_a_pod_is_starting_until_its_main_container_runs() -> None:
    assert starting(started(cn_pod(), running=False))
    created = cn_pod()
    del created["status"]
    assert starting(created)  # just created: no status yet
    assert not starting(started(cn_pod(), running=True))
    assert not starting(started(cn_pod(), running=False, unschedulable=True))
    dying = started(cn_pod(), running=False)
    dying["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not starting(dying)


class NoCalls:
    """A HAKeeper that must not be reached."""

    def __getattr__(self, name: str):
        raise AssertionError(f"{name} called")


def test_a_pass_over_a_starting_pod_conflicts_before_the_store_lookup() -> None:
    """The runtime retries a conflict after 2 s; the store cache is not looked at (it would
    be built, empty, on this first lookup, and the pod would wait for a 30 s resync)."""
    client, sink = FakeClient(), ListSink()
    p = started(cn_pod(**{"pool.matrixorigin.io/management-policy": "Pooling"}), running=False)
    p["metadata"]["labels"].update({"matrixorigin.io/instance": "pool", PHASE: "Unknown"})
    client.add(PODS, p)
    actor = StoreActor(timing=Timing(), hakeeper=NoCalls())  # type: ignore[arg-type]
    with pytest.raises(Conflict):
        actor.observe(context(client, PODS, "p", sink))
    assert sink.msgs() == ["error sync stats"]  # "CN not started", as the operator logs it
    assert client.get(PODS, "p")["metadata"]["resourceVersion"] == "1"  # nothing written


class Keeper:
    """A HAKeeper that answers (``down``: every call fails as an unreachable one)."""

    def __init__(self, *, down: bool = False) -> None:
        self.down = down
        self.calls: list[str] = []

    def patch_store(self, pod, *, state, labels) -> None:
        self._call("patch_store")

    def delete_store(self, uuid: str) -> None:
        self._call("delete_store")

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if self.down:
            raise ConnectionRefusedError("connect: connection refused")


def held_pod(**annotations: str) -> dict:
    p = cn_pod(**{SCORE: '{"sessionCount":0}', **annotations})
    held = {PHASE: "Terminating", KRUISE_STATE_LABEL: PREPARING_DELETE}
    p["metadata"]["labels"].update({"matrixorigin.io/instance": "pool", **held})
    p["metadata"]["finalizers"] = [DRAINING_FINALIZER]
    return p


def preparing_stop(p: dict, keeper: Keeper):
    client, sink = FakeClient(), ListSink()
    client.add(PODS, p)
    actor = StoreActor(timing=Timing(), hakeeper=keeper)  # type: ignore[arg-type]
    try:
        actor.observe(context(client, PODS, "p", sink))
    except ReSync as resync:
        return client.get(PODS, "p"), resync
    return client.get(PODS, "p"), None


def test_a_held_pod_first_waits_the_minimum_delay() -> None:
    """OnPreparingStop's first pass annotates the drain's start, sets the store Draining
    and requeues after the minimum delay itself (controller.go:158-191); the hook stays."""
    keeper = Keeper()
    after, resync = preparing_stop(held_pod(), keeper)
    assert DRAINING_START_ANNOTATION in after["metadata"]["annotations"]
    assert after["metadata"]["finalizers"] == [DRAINING_FINALIZER]
    assert resync is not None and resync.after == Timing().store_drain_min_delay
    assert keeper.calls == ["patch_store"]


def test_a_drained_pod_loses_its_hook_after_the_minimum_delay() -> None:
    keeper = Keeper()
    after, resync = preparing_stop(held_pod(**{DRAINING_START_ANNOTATION: stamp(-20)}), keeper)
    assert resync is None
    assert after["metadata"]["finalizers"] == []
    assert DRAINING_START_ANNOTATION not in after["metadata"]["annotations"]


def test_a_pod_with_sessions_keeps_its_hook_until_the_drain_times_out() -> None:
    busy = {SCORE: '{"sessionCount":2}'}
    after, resync = preparing_stop(
        held_pod(**{DRAINING_START_ANNOTATION: stamp(-20), **busy}), Keeper()
    )
    assert after["metadata"]["finalizers"] == [DRAINING_FINALIZER]
    assert resync is not None and resync.after == Timing().store_retry
    timed_out = stamp(-(Timing().store_drain_timeout + 1))
    after, resync = preparing_stop(
        held_pod(**{DRAINING_START_ANNOTATION: timed_out, **busy}), Keeper()
    )
    assert resync is None and after["metadata"]["finalizers"] == []


def test_on_deleted_keeps_the_hook_while_hakeeper_is_away() -> None:
    """OnDeleted deletes the store in HAKeeper first; unreachable, the finalizer stays
    (controller.go:101-109) and the runtime retries."""
    client, sink = FakeClient(), ListSink()
    client.add(PODS, held_pod())
    down = StoreActor(timing=Timing(), hakeeper=Keeper(down=True))  # type: ignore[arg-type]
    with pytest.raises(Exception, match="error remove CN store"):
        down.finalize(context(client, PODS, "p", sink))
    assert client.get(PODS, "p")["metadata"]["finalizers"] == [DRAINING_FINALIZER]
    up = StoreActor(timing=Timing(), hakeeper=Keeper())  # type: ignore[arg-type]
    assert up.finalize(context(client, PODS, "p", sink))
    assert client.get(PODS, "p")["metadata"]["finalizers"] == []


def stamp(offset: float) -> str:
    """An RFC 3339 time ``offset`` seconds from now."""
    return Timing().stamp(time.time() + offset)


# ================================================================ on a real cluster

SCORE = "matrixorigin.io/score"


def migrate_with_sessions(scene, model) -> tuple[str, str]:
    """x bound to a source pod with one session, then migrated; (source, target)."""
    scene.create_pool("p", max_idle=2)
    scene.idle_count(2)
    scene.create_claim("x", pool="p")
    source = scene.bound_claim("x")["spec"]["podName"]
    scene.settle(model, "x")
    scene.api.merge_patch(
        PODS, scene.namespace, source, {"metadata": {"annotations": {SCORE: '{"sessionCount":1}'}}}
    )
    scene.wait(
        "cnstore keeps the deletion cost at the session count",
        lambda: annotations(scene.pod(source)).get(DELETION_COST) == "1",
        op_seconds=60,
    )
    target = next(p for p in scene.idle_pods() if p["metadata"]["name"] != source)
    scene.migrate("x", target)
    scene.wait(
        "the source starts draining",
        lambda: labels(scene.pod(source)).get(PHASE) == "Draining",
        op_seconds=30,
    )
    return source, target["metadata"]["name"]


def test_drain_waits_for_the_sessions_of_the_score(run_model, scene) -> None:
    model = run_model("fixed")
    source, target = migrate_with_sessions(scene, model)
    scene.holds(
        "a source with a session stays Draining past the minimum delay",
        lambda: labels(scene.pod(source)).get(PHASE) == "Draining",
        op_seconds=25,
    )
    scene.api.merge_patch(
        PODS, scene.namespace, source, {"metadata": {"annotations": {SCORE: '{"sessionCount":0}'}}}
    )
    scene.wait(
        "the source is back in the pool",
        lambda: labels(scene.pod(source)).get(PHASE) == "Idle",
        op_seconds=30,
    )
    scene.wait(
        "the migration completes",
        lambda: "sourcePod" not in scene.claim("x")["spec"],
        op_seconds=30,
    )
    assert scene.claim("x")["status"]["store"]["string"] == target


def test_drain_timeout_evicts_the_source(run_model, scene) -> None:
    """The reclaim drain times out and evicts the source (phase Terminating); the CloneSet
    holds it behind its pre-delete hook and OnPreparingStop drains it once more, from a new
    start, until the same timeout ("handle graceful logic in OnPreparingStop()",
    cnstore/pooling.go:56): with sessions that never end, two timeouts pass."""
    model = run_model("fixed", "--drain-timeout", "30")
    source, _ = migrate_with_sessions(scene, model)
    held = scene.wait(
        "the evicted source is held in PreparingDelete",
        lambda: (
            (pod := scene.pod(source)) is not None
            and labels(pod).get(KRUISE_STATE_LABEL) == PREPARING_DELETE
            and pod
        ),
        op_seconds=60,
    )
    assert DRAINING_FINALIZER in held["metadata"]["finalizers"]
    scene.wait("the source is deleted", lambda: scene.pod(source) is None, op_seconds=60)
    assert model.lines(
        "drain pool pod timeout, delete it to avoid workload intervention", name=source
    )
    assert model.lines("store draining timeout, force delete CN", name=source)
    scene.wait(
        "the migration completes",
        lambda: "sourcePod" not in scene.claim("x")["spec"],
        op_seconds=30,
    )
