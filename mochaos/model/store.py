"""The CN store controller (``cnstore``) for pool pods: stats, Unknown → Idle, the drain.

Modelled on cnstore/controller.go and pooling.go (docs/operator-behaviour.md §7.1-§7.2) for pods
of the ``Pooling`` policy: in kruise lifecycle state Normal, and the drain behind the CloneSet's
pre-delete hook once the pool's CloneSet (:mod:`mochaos.model.pool`) holds a pod in
``PreparingDelete``; see :class:`StoreActor`.
"""

from __future__ import annotations

import contextlib

from mochaos.ctrl.finalizers import DRAINING_FINALIZER, PREPARING_DELETE, PREPARING_UPDATE
from mochaos.ctrl.informer import MODIFIED
from mochaos.ctrl.objects import COMPONENT_LABEL as COMPONENT
from mochaos.ctrl.objects import CONNECTIONS_ANNOTATION as CONNECTIONS
from mochaos.ctrl.objects import CORDON_ANNOTATION as CORDON
from mochaos.ctrl.objects import DELETE_ON_RECLAIM_ANNOTATION as DELETE_ON_RECLAIM
from mochaos.ctrl.objects import DELETION_COST_ANNOTATION as DELETION_COST
from mochaos.ctrl.objects import DIAGNOSE_ANNOTATION as DIAGNOSE
from mochaos.ctrl.objects import DIRECT_POD_LABEL as DIRECT_POD
from mochaos.ctrl.objects import DRAINING_START_ANNOTATION as DRAINING_START
from mochaos.ctrl.objects import INSTANCE_LABEL as INSTANCE
from mochaos.ctrl.objects import KRUISE_STATE_LABEL as KRUISE_STATE
from mochaos.ctrl.objects import MANAGEMENT_POLICY_ANNOTATION as MANAGEMENT_POLICY
from mochaos.ctrl.objects import PHASE_LABEL as PHASE
from mochaos.ctrl.objects import RECLAIMED_AT_ANNOTATION as RECLAIMED_AT
from mochaos.ctrl.rest import PODS, Conflict, NotFound, Obj
from mochaos.model.dict_helpers import (
    annotations_of,
    deleting,
    labels_of,
    mutable_annotations,
    mutable_labels,
)
from mochaos.model.hakeeper import (
    DRAINING,
    SCORE_ANNOTATION,
    HAKeeper,
    MissingScore,
    Score,
    container_started,
    read_score,
    store_uuid,
)
from mochaos.model.runtime.context import Context, OperatorError, ReSync, wrap
from mochaos.model.timing import Timing, since

NAME = "cnstore"
STATS_ANNOTATIONS = (DELETION_COST, CONNECTIONS, SCORE_ANNOTATION)

SRC = "cnstore/controller.go"
POOLING = "cnstore/pooling.go"


def starting(pod: Obj) -> bool:
    """The pod is being started: scheduled or schedulable, its main container not running
    yet (the scheduler and kwok are still writing it)."""
    if container_started(pod) is not None or deleting(pod):
        return False
    conditions = pod.get("status", {}).get("conditions") or []
    return not any(
        c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions
    )


def wants_pod_event(event: str, old: Obj | None, new: Obj | None) -> bool:
    """The cnstore watch filter (controller.go:659-727): CN pods only; updates pass on a
    label, generation or deletionTimestamp change, or an added/changed annotation other
    than the stats ones; creates and deletes pass.
    """
    obj = new if new is not None else old
    if obj is None or labels_of(obj).get(COMPONENT) != "CNSet":
        return False
    if event != MODIFIED or old is None or new is None:
        return True
    old_meta, new_meta = old.get("metadata", {}), new.get("metadata", {})
    if labels_of(old) != labels_of(new):
        return True
    if old_meta.get("generation") != new_meta.get("generation"):
        return True
    if old_meta.get("deletionTimestamp") != new_meta.get("deletionTimestamp"):
        return True
    old_annotations = annotations_of(old)
    return any(
        old_annotations.get(k) != v
        for k, v in annotations_of(new).items()
        if k not in STATS_ANNOTATIONS
    )


class StoreActor:
    """Observe of CN pods; never finalizes.

    - a pass over a pod still being started ends in a write conflict and is retried after
      the runtime's 2 s (see :meth:`_ensure_finalizer`);
    - every pass refreshes the pod's stats from the query service — in the model the pod's
      own ``matrixorigin.io/score`` annotation (written as zero when missing) — and keeps
      ``pod-deletion-cost`` equal to the session count; then requeues after 30 s;
    - ``Unknown`` → ``Idle`` once the store is registered (its main container runs);
    - ``Draining`` → ``Idle`` once the minimum delay has passed since ``reclaimed-at`` and
      the score shows no sessions, pipelines or replicas; after the drain timeout →
      ``Terminating``.

    - a pod in kruise state ``PreparingDelete`` (the pool's CloneSet holds it behind its
      pre-delete hook, see pool.py) is drained as OnPreparingStop drains it: the drain's
      start annotated, the store set Draining in HAKeeper, the minimum delay waited, then
      the ``cn-draining`` finalizer — the hook — removed once no session is left or the
      drain timed out, and the CloneSet deletes the pod.

    A ``store-cordon`` annotation makes a pass only cordon the store (a no-op HAKeeper
    call). The store controller's own ``cnstore`` finalizer is not put on pods; a deleting
    pod that still has the ``cn-draining`` hook is finalized as OnDeleted does
    (:meth:`finalize`: kwok's pod-delete stage removes no finalizer); the readiness
    condition ``matrixorigin.io/cn-store`` is not written (kwok owns pod status); there is
    no lock service to migrate (the model's CNs hold no locks).
    """

    def __init__(self, *, timing: Timing, hakeeper: HAKeeper) -> None:
        self.timing = timing
        self.hakeeper = hakeeper

    def observe(self, ctx: Context) -> None:
        """observe (controller.go:434-476) for a live pod."""
        pod = ctx.obj
        if not labels_of(pod).get(INSTANCE):
            raise OperatorError(
                "error resolve CNSet: cannot find instance name for pod, instance label is empty"
            )
        try:
            self._sync_stats(ctx)
        except Exception as err:  # stats never block the state machine
            ctx.log.info("error sync stats", caller=f"{SRC}:454", error=str(err))
        if CORDON in annotations_of(pod):
            uuid = store_uuid(pod)
            ctx.log.info("call HAKeeper to cordon CN store", caller=f"{SRC}:420", uuid=uuid)
            self.hakeeper.patch_store(pod, state=DRAINING, labels=None)
            return
        if labels_of(pod).get(KRUISE_STATE) in (PREPARING_UPDATE, PREPARING_DELETE):
            # OnPreparingUpdate drains as OnPreparingStop does (controller.go:122-139, 464-467)
            self._on_preparing_stop(ctx)
            return
        self._ensure_finalizer(ctx)
        self._on_normal(ctx)
        raise ReSync("resync", self.timing.store_resync)

    def finalize(self, ctx: Context) -> bool:
        """OnDeleted (controller.go:88-120) of a deleting CN pod that still has the
        ``cn-draining`` hook: the store deleted in HAKeeper, then the finalizer removed (a
        HAKeeper that cannot be reached keeps it, and the pass is retried with backoff).
        The runtime reaches it without the ``cnstore`` finalizer the model leaves out."""
        pod = ctx.obj
        if DRAINING_FINALIZER not in (pod["metadata"].get("finalizers") or []):
            return True
        uuid = store_uuid(pod)
        ctx.log.info("call HAKeeper to remove CN store", caller=f"{SRC}:101", uuid=uuid)
        try:
            self.hakeeper.delete_store(uuid)
        except Exception as err:
            raise wrap(err, "error remove CN store") from err

        with contextlib.suppress(NotFound):
            ctx.client.patch(PODS, pod, lambda: _drop_hook(pod))
        return True

    def _sync_stats(self, ctx: Context) -> None:
        """syncStats + patchStoreStats (controller.go:483-575), the query service being the
        pod's score annotation.
        """
        pod = ctx.obj
        started = container_started(pod)
        if started is None:
            raise OperatorError("CN not started")
        try:
            score = read_score(pod)
        except (MissingScore, ValueError):
            score = Score()
        score.started = started

        def write() -> None:
            annotations = mutable_annotations(pod)
            annotations[SCORE_ANNOTATION] = score.to_annotation()
            annotations[DELETION_COST] = str(score.sessions)
            annotations[CONNECTIONS] = str(score.pipelines + score.sessions)

        try:
            ctx.client.patch(PODS, pod, write)
        except Exception as err:
            raise wrap(err, "error patch stats to pod anno") from err

    def _ensure_finalizer(self, ctx: Context) -> None:
        """OnNormal's first write (controller.go:318-325): the ``cn-draining`` finalizer,
        patched with an optimistic lock (the runtime's ``buildPatch``).

        While the scheduler and kwok start the pod they keep writing it, and the patch
        conflicts; the runtime retries after 2 s (reconciler.go:315-318), so the store is
        looked up once the pod runs. On the real manager at 2301e3b every pool pod whose
        first pass came before it ran logged "CN not started" and patched the finalizer
        only on a later pass (docs/model-pacing.md). The finalizer is the CloneSet's
        pre-delete hook: a pod that has it is held in ``PreparingDelete`` when scaled in.
        """
        pod = ctx.obj
        if starting(pod):
            name = pod["metadata"]["name"]
            raise Conflict(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
            )
        if DRAINING_FINALIZER in (pod["metadata"].get("finalizers") or []):
            return

        def add() -> None:
            pod["metadata"].setdefault("finalizers", []).append(DRAINING_FINALIZER)

        try:
            ctx.client.patch(PODS, pod, add)
        except Exception as err:
            raise wrap(err, "ensure finalizers for CNStore Pod") from err

    def _on_preparing_stop(self, ctx: Context) -> None:
        """OnPreparingStop (controller.go:142-213) for a pod the CloneSet holds.

        The minimum delay is waited with a requeue of the minimum delay itself (:190-191);
        afterwards the drain is polled every ``retryInterval`` until no session, pipeline
        or replica is left; then :meth:`_complete_draining`. A drain past the timeout
        completes at once (:178-181).
        """
        pod = ctx.obj
        uuid = store_uuid(pod)
        started = annotations_of(pod).get(DRAINING_START)
        if started is None:
            stamp = self.timing.stamp()
            try:
                ctx.client.patch(
                    PODS, pod, lambda: mutable_annotations(pod).__setitem__(DRAINING_START, stamp)
                )
            except Exception as err:
                raise wrap(err, "error patching store draining start time") from err
            elapsed = 0.0
        else:
            elapsed = since(started)
        if elapsed > self.timing.store_drain_timeout:
            ctx.log.info("store draining timeout, force delete CN", caller=f"{SRC}:179", uuid=uuid)
            self._complete_draining(ctx)
            return
        ctx.log.info("set CN store draining", caller=f"{SRC}:226", uuid=uuid)
        try:
            self.hakeeper.patch_store(pod, state=DRAINING, labels=None)
        except Exception as err:
            raise wrap(err, "error set CN state draining") from err
        try:
            score = read_score(pod)
        except Exception as err:
            raise wrap(err, "error get store connection count") from err
        safe = score.safe_to_reclaim()
        if not safe:
            ctx.log.info(
                "wait store connection to be drained",
                caller=f"{SRC}:239",
                uuid=uuid,
                connections=score.sessions,
                pipelines=score.pipelines,
            )
        if elapsed < self.timing.store_drain_min_delay:
            raise ReSync(
                "wait min-delay for CN draining state get propagated",
                self.timing.store_drain_min_delay,
            )
        if safe:  # no lock service in the model: the lock migration is done at once
            self._complete_draining(ctx)
            return
        if elapsed > self.timing.store_drain_long:
            self._diagnose(ctx)
        raise ReSync("wait for CN store draining", self.timing.store_retry)

    def _complete_draining(self, ctx: Context) -> None:
        """completeDraining (controller.go:297-313): the hook's finalizer and the drain's
        annotations removed; the CloneSet then deletes the pod."""
        pod = ctx.obj

        def complete() -> None:
            _drop_hook(pod)
            for key in (DRAINING_START, DIAGNOSE):
                mutable_annotations(pod).pop(key, None)

        try:
            ctx.client.patch(PODS, pod, complete)
        except Exception as err:
            raise wrap(err, "error removing CN draining finalizer") from err

    def _on_normal(self, ctx: Context) -> None:
        """OnNormal → poolingCNReconcile (controller.go:316-354, pooling.go:30-117)."""
        pod = ctx.obj
        if annotations_of(pod).get(MANAGEMENT_POLICY) != "Pooling":
            return
        phase = labels_of(pod).get(PHASE, "")
        if phase == "Draining":
            self._drain(ctx)
        elif phase == "Unknown":
            if self.hakeeper.registered(pod):
                self._set_phase(ctx, "Idle")
        elif phase not in ("Bound", "Idle", "Terminating"):
            raise OperatorError(f"unkown CN phase {phase}")

    def _drain(self, ctx: Context) -> None:
        """The reclaim drain of a Draining pool pod (pooling.go:44-86)."""
        pod = ctx.obj
        reclaimed = annotations_of(pod).get(RECLAIMED_AT)
        if reclaimed is None:
            self._set_phase(ctx, "Idle")
            return
        elapsed = since(reclaimed)
        if elapsed > self.timing.store_drain_timeout:
            ctx.log.info(
                "drain pool pod timeout, delete it to avoid workload intervention",
                caller=f"{POOLING}:55",
            )
            self._evict(ctx)
            return
        if elapsed > self.timing.store_drain_long:
            self._diagnose(ctx)
        if elapsed < self.timing.store_drain_min_delay:
            raise ReSync("wait min delay duration", self.timing.store_retry)
        try:
            score = read_score(pod)
        except Exception as err:
            raise wrap(err, "error get store connection count") from err
        if not score.safe_to_reclaim():
            raise ReSync("store is still draining", self.timing.store_retry)
        if DELETE_ON_RECLAIM in annotations_of(pod):
            ctx.log.info("evict pod since deleteOnReclaim is set", caller=f"{POOLING}:71")
            self._evict(ctx)
            return
        if DIRECT_POD in labels_of(pod):
            ctx.log.info("evict direct pod on reclaim", caller=f"{POOLING}:76")
            self._evict(ctx)
            return

        def back_to_pool() -> None:
            mutable_annotations(pod).pop(RECLAIMED_AT, None)
            mutable_labels(pod)[PHASE] = "Idle"

        ctx.client.patch(PODS, pod, back_to_pool)

    def _diagnose(self, ctx: Context) -> None:
        """diagnosisDraining (controller.go:215-228): a drain taking long is marked for
        diagnosis, once."""
        pod = ctx.obj
        if DIAGNOSE not in annotations_of(pod):
            ctx.client.patch(PODS, pod, lambda: mutable_annotations(pod).__setitem__(DIAGNOSE, "y"))

    def _set_phase(self, ctx: Context, phase: str) -> None:
        pod = ctx.obj
        try:
            ctx.client.patch(PODS, pod, lambda: mutable_labels(pod).__setitem__(PHASE, phase))
        except Exception as err:
            raise wrap(err, "error patch CN phase idle") from err

    def _evict(self, ctx: Context) -> None:
        """evictPoolPodGracefully (pooling.go:119-138): phase Terminating; the pool deletes it."""
        pod = ctx.obj

        def terminate() -> None:
            mutable_labels(pod)[PHASE] = "Terminating"
            if labels_of(pod).get(DIRECT_POD):
                mutable_labels(pod)[KRUISE_STATE] = "PreparingDelete"

        try:
            ctx.client.patch(PODS, pod, terminate)
        except Exception as err:
            raise wrap(err) from err


def _drop_hook(pod: Obj) -> None:
    """Remove the ``cn-draining`` finalizer (the CloneSet's pre-delete hook) from ``pod``."""
    meta = pod["metadata"]
    meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != DRAINING_FINALIZER]
