"""The CloneSet controller (apps.kruise.io/v1alpha1), as OpenKruise v1.4.0 runs it.

One pass (cloneset/cloneset_controller.go:183-355): list the pods the CloneSet controls,
release those whose labels left the selector, make the template's ControllerRevision the
update revision, **scale** (cloneset/sync/cloneset_scale.go:48-155), and only when scaling
did nothing **update** (cloneset_update.go:46-130), then write the status
(cloneset_status.go:72-108), drop the names of pods that are gone from
``scaleStrategy.podsToDelete`` (cloneset_controller.go:497-521) and old revisions.

Scale, in kruise's order:
1. pods in PreparingDelete may go back to PreparingNormal when replicas grew again — unless
   a hook has ``markPodNotReady`` (no regret then; the operator's CNSet sets it);
2. create the missing pods (``<set>-<5 random chars>``, lifecycle PreparingNormal, PVCs
   first, instance ids of orphaned PVCs reused unless ``disablePVCReuse``);
3. delete the PreparingDelete pods whose preDelete hook was released;
4. delete the pods named in ``podsToDelete`` or labelled ``apps.kruise.io/specified-delete``
   (ready ones within the maxUnavailable budget);
5. scale in the surplus, first-to-go as :mod:`ranking` orders them, unless specified
   deletions are pending.
"Delete" means: a pod hooked by ``lifecycle.preDelete`` (carrying one of its finalizers or
labels) moves to PreparingDelete (and, with ``markPodNotReady``, KruisePodReady False) and
stays until the hook's owner removes the finalizer/label; any other pod is deleted with the
PVCs of its instance id.

Update, after every pod's state is refreshed (:func:`workload.refresh_pod_state`): pods not
at the update revision are updated — as many as ``updateStrategy.maxUnavailable`` allows,
in k8s' ActivePods order with PreparingUpdate pods first — in place when only labels,
annotations and images changed (``InPlaceIfPossible`` / ``InPlaceOnly``, through the
``inPlaceUpdate`` hook: :func:`workload.update_in_place`), otherwise by recreation (the pod is
labelled ``apps.kruise.io/specified-delete`` and scale replaces it; ``InPlaceOnly`` refuses).

Not emulated (the operator does not rely on them): new pods of the *current* revision under
a ``partition`` (every new pod gets the update revision), ``maxSurge`` during updates beyond
kruise's arithmetic, priority/scatter update strategies, image pre-download,
PodUnavailableBudget.
"""

from __future__ import annotations

import copy
import math

from mochaos.doubles.kruise import inplace, keys, lifecycle, naming, readiness
from mochaos.doubles.kruise.api import CLONESETS, PODS, PVCS, ApiError, Conflict, NotFound, Obj
from mochaos.doubles.kruise.events import NORMAL, WARNING
from mochaos.doubles.kruise.objects import (
    deleting,
    int_or_percent,
    is_active,
    is_ready,
    labels_of,
    name_of,
    namespace_of,
    owned_by,
    selector_string,
    uid_of,
)
from mochaos.doubles.kruise.pods import (
    claims_for,
    inject_readiness_gate,
    pod_from_template,
    wire_volumes,
)
from mochaos.doubles.kruise.ranking import scale_in_order, update_order
from mochaos.doubles.kruise.revisions import History, template_of
from mochaos.doubles.kruise.workload import (
    Pass,
    UpdateError,
    available_in,
    create_claims,
    is_pod_available,
    is_update_ready,
    refresh_pod_state,
    release_or_adopt,
    update_in_place,
    write_status,
)

MAX_INT32 = 2**31 - 1
CONTROLLER = "cloneset-controller"


def _spec(cs: Obj) -> Obj:
    return cs.get("spec") or {}


def _replicas(cs: Obj) -> int:
    return int(_spec(cs).get("replicas", 1))


def _min_ready(cs: Obj) -> int:
    return int(_spec(cs).get("minReadySeconds") or 0)


def _revision(pod: Obj) -> str:
    return labels_of(pod).get(keys.CONTROLLER_REVISION_HASH, "")


def _at_revision(pod: Obj, revision: str) -> bool:
    """EqualToRevisionHash: the full name or its short hash matches."""
    have = _revision(pod)
    return have == revision or naming.short_hash(have) == naming.short_hash(revision)


def _or_default(value: object, default: int | str) -> int | str:
    """intstr.ValueOrDefault."""
    return default if value is None else value  # type: ignore[return-value]


def is_specified_delete(cs: Obj, pod: Obj) -> bool:
    """Labelled ``apps.kruise.io/specified-delete`` or named in ``podsToDelete``."""
    if keys.SPECIFIED_DELETE in labels_of(pod):
        return True
    return name_of(pod) in ((_spec(cs).get("scaleStrategy") or {}).get("podsToDelete") or [])


def partition_replicas(cs: Obj) -> int:
    """util.CalculatePartitionReplicas."""
    partition = (_spec(cs).get("updateStrategy") or {}).get("partition")
    if partition is None:
        return 0
    replicas = _replicas(cs)
    value = int_or_percent(partition, replicas, round_up=True)
    if replicas > 1 and value >= replicas and isinstance(partition, str) and partition != "100%":
        value = replicas - 1
    return max(min(value, replicas), 0)


class Diffs:
    """calculateDiffsWithExpectation (cloneset/sync/cloneset_sync_utils.go:89-252), with
    CloneSetPartitionRollback off (kruise's default)."""

    def __init__(self, p: Pass, cs: Obj, pods: list[Obj], current: str, update: str) -> None:
        strategy = _spec(cs).get("updateStrategy") or {}
        scale = _spec(cs).get("scaleStrategy") or {}
        replicas = _replicas(cs)
        partition = partition_replicas(cs)
        max_surge = 0
        if strategy.get("maxSurge") is not None:
            max_surge = int_or_percent(strategy["maxSurge"], replicas, round_up=True)
        max_unavailable = int_or_percent(
            _or_default(strategy.get("maxUnavailable"), keys.DEFAULT_CLONESET_MAX_UNAVAILABLE),
            replicas,
            round_up=max_surge == 0,
        )
        scale_max_unavailable = int_or_percent(
            _or_default(scale.get("maxUnavailable"), MAX_INT32),
            replicas,
            round_up=True,
        )
        new_count = new_active = old_count = old_active = 0
        unavailable_new = unavailable_old = 0
        to_delete_new = to_delete_old = pre_deleting_new = pre_deleting_old = 0
        for pod in pods:
            new = _at_revision(pod, update)
            if new:
                new_count += 1
            else:
                old_count += 1
            if lifecycle.state_of(pod) == keys.PREPARING_DELETE:
                if new:
                    pre_deleting_new += 1
                else:
                    pre_deleting_old += 1
                continue
            if new:
                new_active += 1
            else:
                old_active += 1
            if is_specified_delete(cs, pod):
                if new:
                    to_delete_new += 1
                else:
                    to_delete_old += 1
            elif not is_pod_available(pod, _min_ready(cs), p.now):
                if new:
                    unavailable_new += 1
                else:
                    unavailable_old += 1
        update_old_diff = max(old_active - partition, 0)
        update_new_diff = min(new_active - (replicas - partition), 0)
        total_unavailable = pre_deleting_new + pre_deleting_old + unavailable_new + unavailable_old

        use_surge = use_surge_old = 0
        if max_surge > 0:
            scale_surge = scale_old_surge = 0
            to_delete = to_delete_new + to_delete_old
            if to_delete > 0:
                scale_surge = min(
                    max(total_unavailable + to_delete - max_unavailable, 0), to_delete
                )
                if scale_surge > to_delete_new:
                    scale_old_surge = scale_surge - to_delete_new
            update_surge = update_old_surge = 0
            if (update_old_diff > 0 > update_new_diff) or (update_old_diff < 0 < update_new_diff):
                if abs(update_old_diff) <= abs(update_new_diff):
                    update_surge = abs(update_old_diff)
                    if update_old_diff < 0:
                        update_old_surge = update_surge
                else:
                    update_surge = abs(update_new_diff)
                    if update_new_diff > 0:
                        update_old_surge = update_surge
            if scale_surge >= update_surge:
                use_surge = min(max_surge, scale_surge)
                use_surge_old = min(use_surge, scale_old_surge)
            else:
                use_surge = min(max_surge, update_surge)
                use_surge_old = min(use_surge, update_old_surge)

        total = len(pods)
        total_old = old_count
        if keys.SCALING_EXCLUDE_PREPARING_DELETE in labels_of(cs) and (
            labels_of(cs)[keys.SCALING_EXCLUDE_PREPARING_DELETE] == "true"
        ):
            total -= pre_deleting_old + pre_deleting_new
            total_old -= pre_deleting_old
        expected_total = replicas + use_surge
        expected_old = partition + use_surge_old

        self.scale_up = self.scale_up_old = self.scale_up_limit = 0
        self.scale_down = self.scale_down_old = self.delete_ready_limit = 0
        if expected_total - total > 0:
            self.scale_up = expected_total - total
            self.scale_up_old = max(expected_old - total_old, 0)
            self.scale_up_limit = min(
                self.scale_up, max(scale_max_unavailable - total_unavailable, 0)
            )
        surplus = total - to_delete_old - to_delete_new - expected_total
        if surplus > 0:
            self.scale_down = surplus
            self.scale_down_old = max(total_old - to_delete_old - expected_old, 0)
        if to_delete_new > 0 or to_delete_old > 0 or self.scale_down > 0:
            self.delete_ready_limit = max(
                max_unavailable + (len(pods) - replicas) - total_unavailable, 0
            )
        if abs(update_old_diff) <= abs(update_new_diff):
            self.update_num = update_old_diff
        else:
            self.update_num = -update_new_diff
        self.update_max_unavailable = 0
        if self.update_num != 0:
            self.update_max_unavailable = max_unavailable + len(pods) - replicas


def _is_pod_ready(p: Pass, pod: Obj) -> bool:
    """isPodReady: available with minReadySeconds 0."""
    return is_pod_available(pod, 0, p.now)


class CloneSetSync:
    """One pass over one CloneSet (module docstring)."""

    def __init__(self, p: Pass, cs: Obj) -> None:
        self.p = p
        self.cs = cs
        self.ns = namespace_of(cs)
        self.name = name_of(cs)
        self.update_revision = naming.revision_name(self.name, _spec(cs).get("template") or {})
        status = cs.get("status") or {}
        self.current_revision = status.get("currentRevision") or self.update_revision
        self.conditions: list[Obj] = []

    def _event(self, type_: str, reason: str, message: str) -> None:
        self.p.events.event(self.cs, type_, reason, message)

    def run(self) -> None:
        """The pass (module docstring)."""
        uid = uid_of(self.cs)
        owned = self.p.pods.list(self.ns, where=lambda o: owned_by(o, uid))
        active = [pod for pod in owned if is_active(pod)]
        pvcs = self.p.pvcs.list(
            self.ns,
            where=lambda o: (
                not deleting(o)
                and any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])
            ),
        )
        if (_spec(self.cs).get("scaleStrategy") or {}).get("disablePVCReuse"):
            pvcs = self._cleanup_pvcs(active, pvcs)
        active = release_or_adopt(self.p, self.cs, CLONESETS, active)
        history = History(self.p.writer, self.p.revisions, self.cs, CLONESETS)
        history.ensure(self.update_revision, _spec(self.cs).get("template") or {})
        for pod in active:
            readiness.ensure_kruise_pod_ready(self.p.writer, pod)
        if not deleting(self.cs):
            step = "FailedScale"
            try:
                if not self.scale(active, pvcs):
                    step = "FailedUpdate"
                    self.update(active, history)
            except (ApiError, UpdateError) as err:
                self.conditions.append(
                    {
                        "type": step,
                        "status": "True",
                        "lastTransitionTime": self.p.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "message": str(err),
                    }
                )
                self.write_status(active)
                raise
        self.write_status(active)
        self.truncate_pods_to_delete(active)
        in_use = {_revision(pod) for pod in active} | {self.current_revision, self.update_revision}
        history.truncate(in_use)
        self._requeue_for_availability(active)

    # -- scale --------------------------------------------------------------------------------

    def scale(self, pods: list[Obj], pvcs: list[Obj]) -> bool:
        """realControl.Scale; True when it changed something (the update step then waits)."""
        specified = [pod for pod in pods if is_specified_delete(self.cs, pod)]
        in_pre_delete = [pod for pod in pods if lifecycle.state_of(pod) == keys.PREPARING_DELETE]
        num_to_delete = len({name_of(pod) for pod in specified + in_pre_delete})
        if self._manage_preparing_delete(pods, in_pre_delete, num_to_delete):
            return True
        diffs = Diffs(self.p, self.cs, pods, self.current_revision, self.update_revision)
        if diffs.scale_up > diffs.scale_up_limit:
            self._event(
                WARNING,
                "ScaleUpLimited",
                "scaleUp is limited because of scaleStrategy.maxUnavailable, "
                f"limit: {diffs.scale_up_limit}",
            )
        if diffs.scale_up > 0:
            return self._create_pods(diffs.scale_up_limit, pods, pvcs)
        if in_pre_delete and self._delete_pods(in_pre_delete, pvcs):
            return True
        pre_delete_names = {name_of(pod) for pod in in_pre_delete}
        to_delete = [pod for pod in specified if name_of(pod) not in pre_delete_names]
        if to_delete and self._delete_pods(self._within_ready_limit(to_delete, diffs), pvcs):
            return True
        if diffs.scale_down > 0:
            if num_to_delete > 0:
                return False
            chosen = self._choose_pods_to_delete(pods, diffs.scale_down, diffs.scale_down_old)
            return self._delete_pods(self._within_ready_limit(chosen, diffs), pvcs)
        return False

    def _manage_preparing_delete(
        self, pods: list[Obj], in_pre_delete: list[Obj], num_to_delete: int
    ) -> bool:
        """managePreparingDelete: regret deletions when replicas grew back, unless a hook
        marks pods not ready."""
        if lifecycle.marks_not_ready(self.cs):
            return False
        diff = _replicas(self.cs) - len(pods) + num_to_delete
        modified = False
        for pod in in_pre_delete:
            if diff <= 0:
                return modified
            if is_specified_delete(self.cs, pod):
                continue
            if lifecycle.update_state(
                self.p.writer, pod, keys.PREPARING_NORMAL, mark_not_ready=False
            ):
                modified = True
            diff -= 1
        return modified

    def _available_ids(self, count: int, pods: list[Obj], pvcs: list[Obj]) -> list[str]:
        """getOrGenAvailableIDs: instance ids of PVCs without a pod first, then new ones."""
        existing: set[str] = set()
        available: set[str] = set()
        for pvc in pvcs:
            if iid := labels_of(pvc).get(keys.CLONESET_INSTANCE_ID):
                existing.add(iid)
                available.add(iid)
        for pod in pods:
            if iid := labels_of(pod).get(keys.CLONESET_INSTANCE_ID):
                existing.add(iid)
                available.discard(iid)
        out: list[str] = []
        reuse = sorted(available)
        for _ in range(count):
            out.append(reuse.pop(0) if reuse else naming.new_instance_id(existing | set(out)))
        return out

    def _new_pod(self, iid: str) -> tuple[Obj, dict[str, Obj]]:
        """newVersionedPods for the update revision, then the PreparingNormal stamp."""
        name = naming.cloneset_pod_name(self.name, iid)
        pod = pod_from_template(self.cs, CLONESETS, name)
        labels = pod["metadata"]["labels"]
        labels[keys.CONTROLLER_REVISION_HASH] = self.update_revision
        labels[keys.POD_TEMPLATE_HASH] = naming.short_hash(self.update_revision)
        labels[keys.CLONESET_INSTANCE_ID] = iid
        inject_readiness_gate(pod, keys.IN_PLACE_UPDATE_READY)
        claims = claims_for(self.cs, lambda t: naming.pvc_name(t, self.name, iid))
        selector_labels = (_spec(self.cs).get("selector") or {}).get("matchLabels") or {}
        for claim in claims.values():
            claim["metadata"]["labels"].update(selector_labels)
            claim["metadata"]["labels"][keys.CLONESET_INSTANCE_ID] = iid
            claim["metadata"]["ownerReferences"] = copy.deepcopy(pod["metadata"]["ownerReferences"])
        if claims:
            wire_volumes(pod, claims)
        lifecycle.stamp(pod, keys.PREPARING_NORMAL)
        return pod, claims

    def _create_pods(self, count: int, pods: list[Obj], pvcs: list[Obj]) -> bool:
        """createPods: in batches of 1, 2, 4… (DoItSlowly); the first failure stops it."""
        created = 0
        for iid in self._available_ids(count, pods, pvcs):
            pod, claims = self._new_pod(iid)
            try:
                create_claims(self.p, claims, pod=name_of(pod))
                self.p.writer.create(PODS, pod, msg="create pod", pod=name_of(pod))
            except ApiError as err:
                self._event(WARNING, "FailedCreate", f"failed to create pod: {err}")
                if created:
                    return True
                raise
            created += 1
            self._event(NORMAL, "SuccessfulCreate", f"succeed to create pod {name_of(pod)}")
        return created > 0

    def _within_ready_limit(self, pods: list[Obj], diffs: Diffs) -> list[Obj]:
        """The pods that may go now: every unready one, ready ones while
        ``diffs.delete_ready_limit`` lasts (spent here, as kruise's scale-in does)."""
        allowed = []
        for pod in pods:
            if not _is_pod_ready(self.p, pod):
                allowed.append(pod)
            elif diffs.delete_ready_limit > 0:
                allowed.append(pod)
                diffs.delete_ready_limit -= 1
        return allowed

    def _delete_pods(self, pods: list[Obj], pvcs: list[Obj]) -> bool:
        """deletePods: a pod hooked by preDelete goes to PreparingDelete and waits; any
        other is deleted with its instance's PVCs."""
        pre_delete = lifecycle.hook(self.cs, "preDelete")
        modified = False
        for pod in pods:
            if lifecycle.is_hooked(pre_delete, pod):
                mark = bool((pre_delete or {}).get("markPodNotReady"))
                if lifecycle.update_state(
                    self.p.writer, pod, keys.PREPARING_DELETE, mark_not_ready=mark
                ):
                    modified = True
                continue
            try:
                self.p.writer.delete(PODS, pod, msg="delete pod", pod=name_of(pod))
            except NotFound:
                continue
            except ApiError as err:
                self._event(WARNING, "FailedDelete", f"failed to delete pod {name_of(pod)}: {err}")
                raise
            modified = True
            self._event(NORMAL, "SuccessfulDelete", f"succeed to delete pod {name_of(pod)}")
            iid = labels_of(pod).get(keys.CLONESET_INSTANCE_ID)
            for pvc in pvcs:
                if labels_of(pvc).get(keys.CLONESET_INSTANCE_ID) == iid:
                    try:
                        self.p.writer.delete(PVCS, pvc, msg="delete pvc", pod=name_of(pod))
                    except NotFound:
                        continue
        return modified

    def _choose_pods_to_delete(self, pods: list[Obj], total: int, old: int) -> list[Obj]:
        """choosePodsToDelete: old-revision pods first, each group in ranking order."""
        updated = [pod for pod in pods if _at_revision(pod, self.update_revision)]
        not_updated = [pod for pod in pods if not _at_revision(pod, self.update_revision)]
        min_ready = _min_ready(self.cs)

        def available(pod: Obj) -> bool:
            return is_pod_available(pod, min_ready, self.p.now)

        def choose(group: list[Obj], diff: int) -> list[Obj]:
            if diff < len(group):
                group = scale_in_order(group, available)
            return group[:diff]

        if old >= total:
            return choose(not_updated, total)
        if old > 0:
            return choose(not_updated, old) + choose(updated, total - old)
        return choose(updated, total)

    def _cleanup_pvcs(self, active: list[Obj], pvcs: list[Obj]) -> list[Obj]:
        """cleanupPVCs with disablePVCReuse: delete the PVCs of instance ids with no live pod."""
        live = {labels_of(pod).get(keys.CLONESET_INSTANCE_ID) for pod in active}
        kept = []
        for pvc in pvcs:
            if labels_of(pvc).get(keys.CLONESET_INSTANCE_ID) in live:
                kept.append(pvc)
                continue
            try:
                self.p.writer.delete(PVCS, pvc, msg="delete unused pvc")
            except NotFound:
                continue
        return kept

    # -- update (lifecycle refresh) -----------------------------------------------------------

    def update(self, pods: list[Obj], history: History) -> None:
        """realControl.Update (cloneset_update.go:46-130)."""
        refreshed = [
            refresh_pod_state(
                self.p,
                self.cs,
                pod,
                at_update_revision=_at_revision(pod, self.update_revision),
                cloneset=True,
            )
            for pod in pods
        ]
        if any(refreshed) or (_spec(self.cs).get("updateStrategy") or {}).get("paused"):
            return
        diffs = Diffs(self.p, self.cs, pods, self.current_revision, self.update_revision)
        if diffs.update_num == 0:
            return
        target = self.update_revision if diffs.update_num > 0 else self.current_revision
        waiting = []
        for pod in pods:
            at_update = _at_revision(pod, self.update_revision)
            if at_update == (diffs.update_num > 0):
                continue
            state = lifecycle.state_of(pod)
            if state == keys.PREPARING_DELETE:
                continue
            if state != keys.UPDATED and inplace.in_grace(pod):
                continue
            waiting.append(pod)
        for pod in self._limit(update_order(waiting), diffs, pods, target):
            self._update_pod(pod, target, history)

    def _limit(self, waiting: list[Obj], diffs: Diffs, pods: list[Obj], target: str) -> list[Obj]:
        """limitUpdateIndexes: no more unavailable pods than the update's maxUnavailable."""
        waiting = waiting[: abs(diffs.update_num)]
        min_ready = _min_ready(self.cs)
        unavailable = target_unavailable = 0
        for pod in pods:
            if not is_pod_available(pod, min_ready, self.p.now):
                unavailable += 1
                target_unavailable += _at_revision(pod, target)
        allowed = 0
        for pod in waiting:
            if target_unavailable + allowed >= diffs.update_max_unavailable:
                break
            if is_pod_available(pod, min_ready, self.p.now):
                if unavailable >= diffs.update_max_unavailable:
                    break
                unavailable += 1
            allowed += 1
        return waiting[:allowed]

    def _update_pod(self, pod: Obj, target: str, history: History) -> None:
        """updatePod: in place when possible, else recreate (InPlaceOnly refuses)."""
        strategy = _spec(self.cs).get("updateStrategy") or {}
        kind = strategy.get("type") or "ReCreate"
        if kind in ("InPlaceIfPossible", "InPlaceOnly"):
            old = history.find(_revision(pod))
            new = history.find(target)
            grace = int(
                (strategy.get("inPlaceUpdateStrategy") or {}).get("gracePeriodSeconds") or 0
            )
            spec = inplace.calculate_spec(
                template_of(old) if old else None,
                template_of(new) if new else (_spec(self.cs).get("template") or {}),
                target,
                grace_seconds=grace,
            )
            if spec is not None:
                update_in_place(self.p, self.cs, pod, spec, cloneset=True)
                return
            if kind == "InPlaceOnly":
                raise UpdateError(
                    f"find Pod {name_of(pod)} update strategy is InPlaceOnly but can not "
                    "update in-place"
                )
        if keys.SPECIFIED_DELETE not in labels_of(pod):
            self.p.writer.patch(
                PODS,
                pod,
                {"metadata": {"labels": {keys.SPECIFIED_DELETE: "true"}}},
                strategic=True,
                msg="recreate pod for update",
                pod=name_of(pod),
                revision=target,
            )
        self._event(
            NORMAL,
            "SuccessfulUpdatePodReCreate",
            f"successfully patch pod {name_of(pod)} specified-delete for update(revision {target})",
        )

    # -- status -------------------------------------------------------------------------------

    def status(self, pods: list[Obj]) -> Obj:
        """calculateStatus (cloneset_status.go:84-108) over the pods listed at the start."""
        min_ready = _min_ready(self.cs)
        replicas = ready = available = updated = updated_ready = 0
        for pod in pods:
            replicas += 1
            up_ready = is_update_ready(pod, 0, self.p.now)
            ready += up_ready
            available += is_pod_available(pod, min_ready, self.p.now)
            at_update = _at_revision(pod, self.update_revision)
            updated += at_update
            updated_ready += at_update and up_ready
        current = self.current_revision
        if updated == replicas:
            current = self.update_revision
        old = self.cs.get("status") or {}
        status: Obj = {
            "observedGeneration": (self.cs.get("metadata") or {}).get("generation", 0),
            "replicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": available,
            "updatedReplicas": updated,
            "updatedReadyReplicas": updated_ready,
            "expectedUpdatedReplicas": _replicas(self.cs) - partition_replicas(self.cs),
            "updateRevision": self.update_revision,
            "currentRevision": current,
            "collisionCount": old.get("collisionCount", 0),
            "labelSelector": selector_string(_spec(self.cs).get("selector")),
        }
        if self.conditions:
            status["conditions"] = self.conditions
        return status

    def write_status(self, pods: list[Obj]) -> None:
        """UpdateCloneSetStatus: write when a counted field changed."""
        status = self.status(pods)
        old = self.cs.get("status") or {}
        differs = status["observedGeneration"] > old.get("observedGeneration", 0) or any(
            status[k] != old.get(k)
            for k in (
                "replicas",
                "readyReplicas",
                "availableReplicas",
                "updatedReadyReplicas",
                "updatedReplicas",
                "expectedUpdatedReplicas",
                "updateRevision",
                "currentRevision",
                "labelSelector",
            )
        )
        write_status(self.p, CLONESETS, self.cs, status, differs=differs)

    def truncate_pods_to_delete(self, pods: list[Obj]) -> None:
        """truncatePodsToDelete: drop names of pods that are no longer active, with a full
        update of the CloneSet as read at the start of the pass (a Conflict is logged and the
        next pass tries again)."""
        scale = _spec(self.cs).get("scaleStrategy") or {}
        names = scale.get("podsToDelete") or []
        if not names:
            return
        live = {name_of(pod) for pod in pods}
        kept = [n for n in names if n in live]
        if len(kept) == len(names):
            return
        cs = copy.deepcopy(self.cs)
        cs["spec"]["scaleStrategy"]["podsToDelete"] = kept or None
        try:
            self.p.writer.update(
                CLONESETS, cs, msg="truncate podsToDelete", dropped=sorted(set(names) - live)
            )
        except Conflict as err:
            self.p.writer.log.warn("failed to truncate podsToDelete", error=str(err))

    def _requeue_for_availability(self, pods: list[Obj]) -> None:
        """Come back when the next ready pod passes minReadySeconds (kruise's DurationStore)."""
        min_ready = _min_ready(self.cs)
        if min_ready <= 0:
            return
        waits = [available_in(pod, min_ready, self.p.now) for pod in pods if is_ready(pod)]
        pending = [w for w in waits if w is not None and w > 0]
        if pending:
            self.p.requeue(math.ceil(min(pending)) + 0.5)
