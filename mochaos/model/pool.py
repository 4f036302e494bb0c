"""The CNPool controller (``cn-pool-manager``) together with the CNSet/CloneSet it drives.

Modelled on cnpool/controller.go:52-188 (docs/operator-behaviour.md §6.1); the model creates and
deletes the pool's pods itself, as the CNSet's CloneSet would — OpenKruise v1.4.0's, with the
pre-delete hook the CNSet gives it (see :class:`PoolActor`).
"""

from __future__ import annotations

import time
from functools import cmp_to_key

from mochaos.ctrl.finalizers import DRAINING_FINALIZER, PREPARING_DELETE
from mochaos.ctrl.objects import CLAIMED_BY_LABEL as CLAIMED_BY
from mochaos.ctrl.objects import COMPONENT_LABEL as COMPONENT
from mochaos.ctrl.objects import INSTANCE_LABEL as INSTANCE
from mochaos.ctrl.objects import KRUISE_STATE_LABEL as KRUISE_STATE
from mochaos.ctrl.objects import MANAGEMENT_POLICY_ANNOTATION as MANAGEMENT_POLICY
from mochaos.ctrl.objects import NAMESPACE_LABEL as NAMESPACE
from mochaos.ctrl.objects import PHASE_LABEL as PHASE
from mochaos.ctrl.objects import POOL_NAME_LABEL as POOL_NAME
from mochaos.ctrl.rest import CLAIMS, PODS, POOLS, ApiError, NotFound, Obj
from mochaos.model.dict_helpers import deleting, labels_of, mutable_labels, name_of, rand_string
from mochaos.model.runtime.context import Context, ReSync, controller_ref, wrap
from mochaos.model.timing import Timing, parse_time

NAME = "cn-pool-manager"
IMAGE = "matrixorigin/matrixone:mochaos-model"
"""The image of a pod on kwok's fake nodes: never pulled, never run."""
KWOK_PLACEMENT = {
    "nodeSelector": {"type": "kwok"},
    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
}
MAX_INT32 = 2**31 - 1
EXPECTATION_TTL = 30.0

SRC = "cnpool/controller.go"


def pool_deletion_cost(pod: Obj) -> int:
    """deletionCost (controller.go:442-459): Terminating < Unknown/"" < Idle < others, +1
    when the pod is claimed.
    """
    phase = labels_of(pod).get(PHASE, "")
    score = {"Terminating": 0, "": 1 << 8, "Unknown": 1 << 8, "Idle": 1 << 9}.get(phase, 1 << 10)
    if labels_of(pod).get(CLAIMED_BY):
        score += 1
    return score


def pool_deletion_order(a: Obj, b: Obj) -> int:
    """deletionOrder (controller.go:433-440): lower cost first, then the newer pod first."""
    diff = pool_deletion_cost(a) - pool_deletion_cost(b)
    if diff:
        return diff
    created_a = parse_time(a["metadata"]["creationTimestamp"])
    created_b = parse_time(b["metadata"]["creationTimestamp"])
    return -int(created_a - created_b)


def pod_for_pool(pool: Obj, name: str, *, image: str | None = None) -> Obj:
    """A CN pod of the pool, as the pool's CNSet would create it.

    ``image`` None: placed on kwok's fake nodes (the embedded cluster), which mark it
    Running without running anything. Else the pod runs on the cluster's real nodes with
    that image, one the node already has (a pause image: it runs until stopped and exits
    at once on SIGTERM), so kubelet owns its status as kwok does on the embedded cluster.
    """
    ns = pool["metadata"]["namespace"]
    labels = dict(pool.get("spec", {}).get("podLabels") or {})
    labels.update(
        {
            POOL_NAME: name_of(pool),
            PHASE: "Unknown",
            KRUISE_STATE: "Normal",
            COMPONENT: "CNSet",
            INSTANCE: name_of(pool),
            NAMESPACE: ns,
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels,
            "annotations": {MANAGEMENT_POLICY: "Pooling"},
            "ownerReferences": [controller_ref(pool, POOLS)],
        },
        "spec": {
            "containers": [{"name": "main", "image": image or IMAGE, "imagePullPolicy": "Never"}],
            **(KWOK_PLACEMENT if image is None else {}),
            "automountServiceAccountToken": False,
        },
    }


class PoolActor:
    """Observe/Finalize of CNPools: keep ``in-use + pending claims + maxIdle`` pods.

    There is no CNSet: the pods are created here, as the CNSet's CloneSet would, and the
    pods the pool marks ``Terminating`` (the CloneSet's ``podsToDelete``) are handled here
    as OpenKruise v1.4.0 handles them with the CNSet's pre-delete hook
    (``FinalizersHandler: cn-draining``, cnset/controller.go:321-326):

    - a pod that carries the hook's finalizer is moved to lifecycle state
      ``PreparingDelete`` and kept until the store controller's drain removes the finalizer
      (``deletePods``, cloneset_scale.go:267-281); a pod without it is deleted at once — a
      pod scaled in before its first store pass ran (no finalizer yet) is not held;
    - a held pod still counts: the CloneSet creates pods only up to ``replicas`` over all
      its live pods, held ones included (``calculateDiffsWithExpectation``,
      cloneset_sync_utils.go:214-229), so the pool is one pod short for each drain. There is
      no early replacement.

    Kruise's ``MarkPodNotReady`` condition is not written (kwok owns pod status), nor is the
    conflict that loses a ``replicas`` decrement on the real CNSet played (docs/bugs.md,
    pool-churn). The real kube-scheduler places the pods on kwok's fake nodes
    (``nodeSelector type: kwok``), which mark them Running/Ready. Pods carry the CNSet
    template's ``management-policy: Pooling`` annotation; the store controller adds the
    ``cn-draining`` finalizer once they run and removes it from a pod deleted otherwise
    (kwok's pod-delete stage removes no finalizer; see store.py).
    """

    def __init__(
        self, *, timing: Timing, max_idle: int | None, pod_image: str | None = None
    ) -> None:
        """``pod_image``: the image of pods run on real nodes (None: on kwok's fake nodes)."""
        self.timing = timing
        self.max_idle = max_idle
        self.pod_image = pod_image
        self._expected: dict[str, dict[str, float]] = {}

    def observe(self, ctx: Context) -> None:
        """Observe always syncs inline (controller.go:48-50)."""
        self.sync(ctx)

    def _live_pods(self, ctx: Context) -> list[Obj]:
        pool = name_of(ctx.obj)
        pods = ctx.client.list(PODS, labels={POOL_NAME: pool, COMPONENT: "CNSet", INSTANCE: pool})
        seen = {name_of(p) for p in pods}
        now = time.monotonic()
        self._expected[pool] = {
            n: t
            for n, t in self._expected.get(pool, {}).items()
            if n not in seen and now - t < EXPECTATION_TTL
        }
        return [p for p in pods if not deleting(p)]

    def sync(self, ctx: Context) -> None:
        """Sync (controller.go:52-188) with the pods in place of the CNSet."""
        p = ctx.obj
        pool = name_of(p)
        in_use, idle, terminating = 0, [], []
        for pod in self._live_pods(ctx):
            phase = labels_of(pod).get(PHASE, "")
            if phase in ("Bound", "Draining"):
                in_use += 1
            elif phase == "Terminating":
                ctx.log.info(
                    "find pod still in terminating state", caller=f"{SRC}:101", pod=name_of(pod)
                )
                terminating.append(pod)
            else:
                idle.append(pod)
        pending = sum(
            1
            for c in ctx.client.list(CLAIMS, labels={POOL_NAME: pool})
            if c.get("status", {}).get("phase") == "Pending"
        )
        scale = p.get("spec", {}).get("strategy", {}).get("scaleStrategy", {})
        max_idle = self.max_idle if self.max_idle is not None else int(scale.get("maxIdle", 0))
        max_pods = int(scale.get("maxPods") or MAX_INT32)
        desired = in_use + pending + max_idle
        active = in_use + len(idle) + len(self._expected[pool])
        if desired > max_pods:
            raise ReSync(
                f"Pool {pool} has reached MaxPods limit {desired}, total Pods: {max_pods}, requeue",
                self.timing.pool_max_pods_wait,
            )
        spec_replicas = active
        ctx.log.info(
            "scale cnset",
            caller=f"{SRC}:138",
            cnset=pool,
            replicas=desired,
            **{"spec replicas": spec_replicas},
        )
        held = self._clone_set_delete(ctx, terminating)
        if desired > spec_replicas:
            # the CloneSet counts the pods it holds in PreparingDelete against replicas
            for _ in range(desired - spec_replicas - held):
                self._create(ctx)
            return
        if pending > 0:
            ctx.log.info(
                "pool has enough pods but there's still pending claims, pause scale-in",
                caller=f"{SRC}:145",
                **{
                    "current replicas": spec_replicas,
                    "desired replicas": desired,
                    "pending claims": pending,
                    "in use pods": in_use,
                },
            )
            return
        # The operator scales in max(active, spec replicas) - desired; here both are equal.
        count = spec_replicas - desired
        victims = sorted(idle, key=cmp_to_key(pool_deletion_order))[:count]
        ctx.log.info("try scale-in CN Pool", caller=f"{SRC}:159", pods=len(victims))
        deleted = []
        for pod in victims:
            mutable_labels(pod)[PHASE] = "Terminating"
            try:
                ctx.client.update(PODS, pod)
            except ApiError as err:
                ctx.log.error(
                    "error set pod terminating",
                    caller=f"{SRC}:166",
                    error=str(err),
                    pod=name_of(pod),
                )
                continue
            deleted.append(pod)
        ctx.log.info("scale-in CN Pool complete", caller=f"{SRC}:171", deleted=len(deleted))
        self._clone_set_delete(ctx, deleted)

    def _create(self, ctx: Context) -> None:
        name = f"{name_of(ctx.obj)}-{rand_string(5)}"
        try:
            ctx.client.create(PODS, pod_for_pool(ctx.obj, name, image=self.pod_image))
        except ApiError as err:
            raise wrap(err, "error create CN pod") from err
        self._expected.setdefault(name_of(ctx.obj), {})[name] = time.monotonic()

    def _clone_set_delete(self, ctx: Context, pods: list[Obj]) -> int:
        """What the CloneSet does with ``podsToDelete`` (``deletePods``, cloneset_scale.go
        :267-300): a pod hooked by the ``cn-draining`` finalizer is moved to
        ``PreparingDelete`` (once) and kept; any other is deleted. Returns how many are kept.
        """
        held = 0
        unhooked = []
        for pod in pods:
            if DRAINING_FINALIZER not in (pod["metadata"].get("finalizers") or []):
                unhooked.append(pod)
                continue
            held += 1
            if labels_of(pod).get(KRUISE_STATE) != PREPARING_DELETE:
                try:
                    ctx.client.patch(PODS, pod, _prepare_delete(pod))
                except ApiError:
                    # OpenKruise's failure, not the operator's: its own requeue retries, and
                    # the pod's next event brings the pool (and this CloneSet) back
                    continue
        self._delete(ctx, unhooked)
        return held

    def _delete(self, ctx: Context, pods: list[Obj]) -> None:
        """Delete the pods (the CloneSet's delete, or the pool's Finalize)."""
        for pod in pods:
            try:
                ctx.client.delete(PODS, pod)
            except NotFound:
                continue
            except ApiError as err:
                raise wrap(err, "error delete CN pod") from err

    def finalize(self, ctx: Context) -> bool:
        """Finalize (controller.go:397-414): remove the pool's pods, done when none is left."""
        pods = self._live_pods(ctx)
        self._delete(ctx, pods)
        return not pods


def _prepare_delete(pod: Obj):
    """The mutation that moves ``pod`` to kruise's lifecycle state PreparingDelete."""

    def mutate() -> None:
        mutable_labels(pod)[KRUISE_STATE] = PREPARING_DELETE

    return mutate
