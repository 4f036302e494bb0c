"""What both workload controllers share: one reconcile pass's context, pod adoption and
release, PVC creation, the lifecycle around in-place updates, and the status write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mochaos.doubles.kruise import inplace, keys, lifecycle
from mochaos.doubles.kruise.api import PODS, PVCS, AlreadyExists, Obj, Resource
from mochaos.doubles.kruise.cache import Cache
from mochaos.doubles.kruise.events import NORMAL, EventRecorder
from mochaos.doubles.kruise.objects import (
    available_in,
    condition,
    controller_of,
    controller_ref,
    labels_of,
    name_of,
    selector_matches,
    uid_of,
)
from mochaos.doubles.kruise.writer import Writer


@dataclass
class Pass:
    """One reconcile pass of one workload."""

    writer: Writer
    pods: Cache
    pvcs: Cache
    revisions: Cache
    events: EventRecorder
    warned: set[str] = field(default_factory=set)
    """Keys of one-off warnings already logged (shared across passes by the controller)."""
    now: datetime = field(default_factory=lambda: datetime.now(tz=UTC))
    requeue_after: float | None = None

    def warn_once(self, key: str, msg: str, **fields: object) -> None:
        """Log a warning the first time ``key`` is seen."""
        if key in self.warned:
            return
        self.warned.add(key)
        self.writer.log.warn(msg, **fields)

    def requeue(self, seconds: float) -> None:
        """Ask for another pass within ``seconds`` (the earliest request wins)."""
        if seconds <= 0:
            return
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds


class UpdateError(Exception):
    """A pod cannot be updated the way the workload's strategy demands."""


def is_update_ready(pod: Obj, min_ready_seconds: int, now: datetime) -> bool:
    """IsPodUpdateReady: Running and available, and InPlaceUpdateReady not False."""
    wait = available_in(pod, min_ready_seconds, now)
    if wait is None or wait > 0:
        return False
    cond = condition(pod, keys.IN_PLACE_UPDATE_READY)
    return cond is None or cond.get("status") == "True"


def is_pod_available(pod: Obj, min_ready_seconds: int, now: datetime) -> bool:
    """sync.IsPodAvailable: lifecycle state unset or Normal, and update-ready."""
    if lifecycle.state_of(pod) not in ("", keys.NORMAL):
        return False
    return is_update_ready(pod, min_ready_seconds, now)


def release_or_adopt(
    p: Pass,
    workload: Obj,
    res: Resource,
    pods: list[Obj],
    *,
    adopt: Callable[[Obj], bool] | None = None,
) -> list[Obj]:
    """ClaimPods: keep the pods this workload controls whose labels match its selector;
    release (drop our controller reference from) the ones that no longer match; adopt
    orphans for which ``adopt`` is true (the StatefulSet's behaviour; CloneSet never adopts).
    Nothing is adopted or released once the workload is deleting."""
    selector = (workload.get("spec") or {}).get("selector")
    uid = uid_of(workload)
    deleting_workload = bool((workload.get("metadata") or {}).get("deletionTimestamp"))
    kept = []
    for pod in pods:
        ref = controller_of(pod)
        matches = selector_matches(selector, labels_of(pod))
        if ref is not None and ref.get("uid") == uid:
            if matches or deleting_workload:
                kept.append(pod)
                continue
            refs = [r for r in pod["metadata"]["ownerReferences"] if r.get("uid") != uid]
            p.writer.patch(
                PODS,
                pod,
                {"metadata": {"ownerReferences": refs, "uid": uid_of(pod)}},
                strategic=False,
                msg="release pod (labels no longer match the selector)",
                pod=name_of(pod),
            )
        elif ref is None and matches and adopt is not None and adopt(pod):
            if deleting_workload:
                continue
            refs = [*(pod["metadata"].get("ownerReferences") or []), controller_ref(workload, res)]
            kept.append(
                p.writer.patch(
                    PODS,
                    pod,
                    {"metadata": {"ownerReferences": refs, "uid": uid_of(pod)}},
                    strategic=False,
                    msg="adopt orphan pod",
                    pod=name_of(pod),
                )
            )
    return kept


def create_claims(p: Pass, claims: dict[str, Obj], *, pod: str) -> None:
    """Create the PVCs that do not exist yet (an existing one is reused)."""
    for claim in claims.values():
        ns, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        if p.pvcs.get(ns, name) is not None:
            continue
        try:
            p.writer.create(PVCS, claim, msg="create pvc", pod=pod)
        except AlreadyExists:
            continue


def write_status(p: Pass, res: Resource, workload: Obj, status: Obj, *, differs: bool) -> None:
    """Write ``status`` when ``differs`` (kruise's inconsistentStatus), on a fresh read,
    retried on conflict."""
    if not differs:
        return

    def mutate(current: Obj) -> bool:
        current["status"] = status
        return True

    p.writer.update_fresh(
        res,
        workload,
        mutate,
        msg="update status",
        sub="status",
        replicas=status.get("replicas"),
        ready=status.get("readyReplicas"),
        available=status.get("availableReplicas"),
        updated=status.get("updatedReplicas"),
        updated_ready=status.get("updatedReadyReplicas"),
        update_revision=status.get("updateRevision"),
    )


def update_in_place(
    p: Pass, workload: Obj, pod: Obj, spec: inplace.UpdateSpec, *, cloneset: bool
) -> None:
    """The lifecycle around an in-place update (cloneset_update.go:238-326,
    stateful_set_control.go:904-991): a pod hooked by ``inPlaceUpdate`` first goes to
    PreparingUpdate and waits there until the hook is released; an Updated pod gets its hook
    handlers back and goes to PreparingUpdate; then the pod is updated and marked Updating
    (a StatefulSet pod without a lifecycle state stays without one)."""
    hook = lifecycle.hook(workload, "inPlaceUpdate")
    state = lifecycle.state_of(pod)
    startable = ("", keys.PREPARING_NORMAL, keys.NORMAL) if cloneset else ("", keys.NORMAL)
    if state in startable:
        if lifecycle.is_hooked(hook, pod):
            mark = bool((hook or {}).get("markPodNotReady"))
            lifecycle.update_state(p.writer, pod, keys.PREPARING_UPDATE, mark_not_ready=mark)
            return
    elif state == keys.UPDATED:
        lifecycle.update_state_with_handler(p.writer, pod, keys.PREPARING_UPDATE, hook)
        return
    elif state == keys.PREPARING_UPDATE:
        if lifecycle.is_hooked(hook, pod):
            return
    elif state != keys.UPDATING:
        raise UpdateError(f"not allowed to in-place update pod {name_of(pod)} in state {state}")
    stamp = keys.UPDATING if (cloneset or state) else ""
    inplace.update(p.writer, pod, spec, cloneset=cloneset, lifecycle_state=stamp)
    p.requeue(spec.grace_seconds)
    p.events.event(
        workload,
        NORMAL,
        "SuccessfulUpdatePodInPlace",
        f"successfully update pod {name_of(pod)} in-place(revision {spec.revision})",
    )


def refresh_pod_state(
    p: Pass, workload: Obj, pod: Obj, *, at_update_revision: bool, cloneset: bool
) -> bool:
    """refreshPodState (cloneset_update.go:158-220, stateful_set_control.go:841-902): finish
    in-place work, then the lifecycle moves that need no new update — PreparingNormal ->
    Normal once every preNormal handler is on (CloneSet only), PreparingUpdate at the update
    revision and finished Updating -> Updated (hook handlers missing) or Normal, Updated ->
    Normal once every inPlaceUpdate handler is back. True when the pod was patched."""
    p.requeue(inplace.refresh(p.writer, pod, p.now))
    spec = workload.get("spec") or {}
    hook = lifecycle.hook(workload, "inPlaceUpdate")
    has_lifecycle = bool(spec.get("lifecycle"))
    state = lifecycle.state_of(pod)
    target = ""
    if state == keys.PREPARING_NORMAL and cloneset:
        pre_normal = lifecycle.hook(workload, "preNormal")
        if pre_normal is None or lifecycle.is_all_hooked(pre_normal, pod):
            target = keys.NORMAL
    elif (state == keys.PREPARING_UPDATE and at_update_revision) or (
        state == keys.UPDATING and not inplace.in_grace(pod)
    ):
        target = keys.UPDATED if has_lifecycle and not lifecycle.is_all_hooked(hook, pod) else ""
        target = target or keys.NORMAL
    elif state == keys.UPDATED and (hook is None or lifecycle.is_all_hooked(hook, pod)):
        target = keys.NORMAL
    if not target:
        return False
    mark = bool((hook or {}).get("markPodNotReady"))
    return lifecycle.update_state(p.writer, pod, target, mark_not_ready=mark)
