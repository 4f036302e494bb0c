"""The Advanced StatefulSet controller (apps.kruise.io/v1beta1), as OpenKruise v1.4.0 runs it.

One pass (statefulset/stateful_set_control.go:308-820): claim the pods named
``<set>-<ordinal>`` (adopting matching orphans, releasing pods whose labels left the
selector), then

- the wanted ordinals are the first ``replicas`` integers not in ``reserveOrdinals`` (so
  ``replicas: 3, reserveOrdinals: [1]`` gives pods 0, 2 and 3); every other pod is condemned;
- a missing wanted pod is created (PVCs ``<template>-<set>-<ordinal>`` first) with
  ``hostname: <pod>``, ``subdomain: <serviceName>``, labels
  ``statefulset.kubernetes.io/pod-name`` and ``controller-revision-hash``, and lifecycle
  Normal; a Failed one is deleted to be recreated;
- ``podManagementPolicy: Parallel`` (the operator's choice) creates all missing pods at once;
  the default OrderedReady creates one and waits until it is Running and Ready;
- condemned pods go highest ordinal first, **one per pass** (a preDelete hook moves a hooked
  pod to PreparingDelete instead, as for CloneSets);
- with ``persistentVolumeClaimRetentionPolicy`` (the StatefulSetAutoDeletePVC gate, on in the
  operator's kruise chart) a PVC is owned by the set when ``whenDeleted: Delete`` and by its
  pod once the pod is scaled away when ``whenScaled: Delete``, so garbage collection removes
  it (stateful_set_utils.go:142-235).

The status (replicas, ready, available, current, updated, updatedReady, revisions, selector,
observedGeneration) is written when it changed (stateful_set_utils.go:586-596). A changed
template is rolled out highest ordinal first, ``maxUnavailable`` (default 1) at a time, in
place when only labels, annotations and images changed and ``podUpdatePolicy`` allows it
(``InPlaceIfPossible`` here), else by deleting the pod so it is recreated. Not emulated:
new pods of the current revision under a ``partition``, ``unorderedUpdate``, scaling's
``maxUnavailable``, image pre-download.
"""

from __future__ import annotations

import math

from mochaos.doubles.kruise import inplace, keys, lifecycle, naming, readiness
from mochaos.doubles.kruise.api import PODS, PVCS, STATEFULSETS, ApiError, NotFound, Obj
from mochaos.doubles.kruise.events import NORMAL, WARNING
from mochaos.doubles.kruise.objects import (
    available_in,
    deleting,
    int_or_percent,
    is_ready,
    is_running,
    labels_of,
    name_of,
    namespace_of,
    selector_string,
    uid_of,
)
from mochaos.doubles.kruise.pods import claims_for, pod_from_template, wire_volumes
from mochaos.doubles.kruise.revisions import History, template_of
from mochaos.doubles.kruise.workload import (
    Pass,
    UpdateError,
    create_claims,
    refresh_pod_state,
    release_or_adopt,
    update_in_place,
    write_status,
)

CONTROLLER = "statefulset-controller"
DELETE = "Delete"


def _spec(sts: Obj) -> Obj:
    return sts.get("spec") or {}


def _replicas(sts: Obj) -> int:
    return int(_spec(sts).get("replicas", 1))


def ordinal_of(pod: Obj) -> int:
    """The pod's ordinal (-1 when its name has none)."""
    return naming.parent_and_ordinal(name_of(pod))[1]


def wanted_ordinals(sts: Obj) -> list[int]:
    """The first ``replicas`` ordinals that are not reserved."""
    reserved = set(_spec(sts).get("reserveOrdinals") or [])
    out: list[int] = []
    ordinal = 0
    while len(out) < _replicas(sts):
        if ordinal not in reserved:
            out.append(ordinal)
        ordinal += 1
    return out


def _min_ready(sts: Obj) -> int:
    rolling = (_spec(sts).get("updateStrategy") or {}).get("rollingUpdate") or {}
    return int(rolling.get("minReadySeconds") or 0)


def _revision(pod: Obj) -> str:
    return labels_of(pod).get(keys.CONTROLLER_REVISION_HASH, "")


def _created(pod: Obj) -> bool:
    return bool((pod.get("status") or {}).get("phase"))


def _healthy(pod: Obj) -> bool:
    """isHealthy: lifecycle unset or Normal, Running, Ready and not deleting."""
    if lifecycle.state_of(pod) not in ("", keys.NORMAL):
        return False
    return is_running(pod) and is_ready(pod) and not deleting(pod)


class StatefulSetSync:
    """One pass over one StatefulSet (module docstring)."""

    def __init__(self, p: Pass, sts: Obj) -> None:
        self.p = p
        self.sts = sts
        self.ns = namespace_of(sts)
        self.name = name_of(sts)
        self.update_revision = naming.revision_name(self.name, _spec(sts).get("template") or {})
        status = sts.get("status") or {}
        self.current_revision = status.get("currentRevision") or self.update_revision
        self.monotonic = _spec(sts).get("podManagementPolicy") != "Parallel"

    def _event(self, type_: str, reason: str, message: str) -> None:
        self.p.events.event(self.sts, type_, reason, message)

    def _members(self) -> list[Obj]:
        """getPodsForStatefulSet: pods named after the set, claimed (adopt/release)."""
        candidates = self.p.pods.list(
            self.ns, where=lambda o: naming.parent_and_ordinal(name_of(o))[0] == self.name
        )
        return release_or_adopt(self.p, self.sts, STATEFULSETS, candidates, adopt=lambda _: True)

    def run(self) -> None:
        """The pass (module docstring)."""
        pods = self._members()
        history = History(self.p.writer, self.p.revisions, self.sts, STATEFULSETS)
        history.ensure(self.update_revision, _spec(self.sts).get("template") or {})
        for pod in pods:
            if not deleting(pod):
                readiness.ensure_kruise_pod_ready(self.p.writer, pod)
        status = self.status(pods)
        try:
            if not deleting(self.sts):
                self.sync(pods, status)
        finally:
            self.write_status(status)
        in_use = {_revision(pod) for pod in pods} | {self.current_revision, self.update_revision}
        history.truncate(in_use)
        self._requeue_for_availability(pods)

    # -- pods ---------------------------------------------------------------------------------

    def sync(self, pods: list[Obj], status: Obj) -> None:
        """updateStatefulSet: create what is missing, then remove what is condemned;
        ``status`` counts the pods created or recreated here, as kruise's does."""
        wanted = wanted_ordinals(self.sts)
        wanted_set = set(wanted)
        replicas: dict[int, Obj] = {}
        condemned: list[Obj] = []
        for pod in pods:
            ordinal = ordinal_of(pod)
            if ordinal in wanted_set:
                replicas[ordinal] = pod
            elif ordinal >= 0:
                condemned.append(pod)
        condemned.sort(key=ordinal_of)
        unhealthy = [pod for pod in [*replicas.values(), *condemned] if not _healthy(pod)]
        first_unhealthy = min(unhealthy, key=ordinal_of) if unhealthy else None

        for ordinal in wanted:
            pod = replicas.get(ordinal)
            if pod is not None and (pod.get("status") or {}).get("phase") == "Failed":
                self._event(
                    WARNING,
                    "RecreatingFailedPod",
                    f"StatefulSet {self.ns}/{self.name} is recreating failed Pod {name_of(pod)}",
                )
                self._delete(pod)
                self._count(status, pod, -1)
                status["replicas"] -= 1
                pod = None
            if pod is None:
                replicas[ordinal] = self._create(ordinal)
                self._count(status, replicas[ordinal], 1)
                status["replicas"] += 1
                if self.monotonic:
                    return
                continue
            if deleting(pod) and self.monotonic:
                return
            self.p.requeue(inplace.refresh(self.p.writer, pod, self.p.now))
            if self.monotonic and not (is_running(pod) and is_ready(pod)):
                return
            self._retention(pod)

        for pod in reversed(condemned):
            if deleting(pod):
                if self.monotonic:
                    return
                continue
            wait = available_in(pod, _min_ready(self.sts), self.p.now)
            available = wait is not None and wait <= 0
            if not available and self.monotonic and pod is not first_unhealthy:
                return
            self._retention(pod)
            if self._delete(pod):
                return
        self.update(pods, replicas)

    def update(self, pods: list[Obj], replicas: dict[int, Obj]) -> None:
        """The rolling update (stateful_set_control.go:713-820): refresh every pod's state,
        then from the highest ordinal down to ``partition`` update each pod not at the update
        revision — in place when possible, else by deleting it (it is recreated at the update
        revision) — and stop once ``maxUnavailable`` (default 1) pods are unavailable."""
        strategy = _spec(self.sts).get("updateStrategy") or {}
        if strategy.get("type") == "OnDelete":
            return
        rolling = strategy.get("rollingUpdate") or {}
        if rolling.get("paused"):
            return
        max_unavailable = max(
            int_or_percent(
                rolling.get("maxUnavailable") if rolling.get("maxUnavailable") is not None else 1,
                _replicas(self.sts),
                round_up=False,
            ),
            1,
        )
        if rolling:
            refreshed = [
                refresh_pod_state(
                    self.p,
                    self.sts,
                    pod,
                    at_update_revision=_revision(pod) == self.update_revision,
                    cloneset=False,
                )
                for pod in pods
            ]
            if any(refreshed):
                return
        partition = int(rolling.get("partition") or 0)
        min_ready = _min_ready(self.sts)
        unavailable = []
        for ordinal in sorted(replicas, reverse=True):
            if ordinal < partition:
                break
            pod = replicas[ordinal]
            outdated = _revision(pod) != self.update_revision
            if outdated and not deleting(pod) and not self._update_in_place(pod, rolling):
                self._delete(pod)
            wait = available_in(pod, min_ready, self.p.now)
            if outdated or not _healthy(pod) or inplace.in_grace(pod):
                unavailable.append(name_of(pod))
            elif wait is None or wait > 0:
                unavailable.append(name_of(pod))
                self.p.requeue(wait or 0)
            if len(unavailable) >= max_unavailable:
                return

    def _update_in_place(self, pod: Obj, rolling: Obj) -> bool:
        """inPlaceUpdatePod: True when the pod is (being) updated in place."""
        policy = rolling.get("podUpdatePolicy") or "ReCreate"
        if policy not in ("InPlaceIfPossible", "InPlaceOnly"):
            return False
        history = History(self.p.writer, self.p.revisions, self.sts, STATEFULSETS)
        old = history.find(_revision(pod))
        new = history.find(self.update_revision)
        grace = int((rolling.get("inPlaceUpdateStrategy") or {}).get("gracePeriodSeconds") or 0)
        spec = inplace.calculate_spec(
            template_of(old) if old else None,
            template_of(new) if new else (_spec(self.sts).get("template") or {}),
            self.update_revision,
            grace_seconds=grace,
        )
        if spec is None:
            if policy == "InPlaceOnly":
                raise UpdateError(
                    f"find strategy is InPlaceOnly but Pod {name_of(pod)} can not update in-place"
                )
            return False
        update_in_place(self.p, self.sts, pod, spec, cloneset=False)
        return True

    def _count(self, status: Obj, pod: Obj, step: int) -> None:
        if _revision(pod) == self.current_revision:
            status["currentReplicas"] += step
        if _revision(pod) == self.update_revision:
            status["updatedReplicas"] += step

    def _create(self, ordinal: int) -> Obj:
        """CreateStatefulPod: PVCs first, then the pod (lifecycle Normal); the new pod."""
        name = naming.statefulset_pod_name(self.name, ordinal)
        pod = pod_from_template(self.sts, STATEFULSETS, name)
        pod["spec"]["hostname"] = name
        if _spec(self.sts).get("serviceName"):
            pod["spec"]["subdomain"] = _spec(self.sts)["serviceName"]
        labels = pod["metadata"]["labels"]
        labels[keys.STATEFULSET_POD_NAME] = name
        labels[keys.CONTROLLER_REVISION_HASH] = self.update_revision
        claims = claims_for(self.sts, lambda t: naming.pvc_name(t, self.name, ordinal))
        selector_labels = (_spec(self.sts).get("selector") or {}).get("matchLabels") or {}
        for claim in claims.values():
            claim["metadata"]["labels"] = dict(selector_labels)
            refs = self._claim_owner_refs(claim, pod_uid="", ordinal=ordinal)
            if refs:
                claim["metadata"]["ownerReferences"] = refs
        if claims:
            wire_volumes(pod, claims)
        lifecycle.stamp(pod, keys.NORMAL)
        try:
            create_claims(self.p, claims, pod=name)
            created = self.p.writer.create(PODS, pod, msg="create pod", pod=name, ordinal=ordinal)
        except ApiError as err:
            self._event(WARNING, "FailedCreate", f"create Pod {name} in StatefulSet failed: {err}")
            raise
        self._event(
            NORMAL, "SuccessfulCreate", f"create Pod {name} in StatefulSet {self.name} successful"
        )
        return created

    def _delete(self, pod: Obj) -> bool:
        """deletePod: a pod hooked by preDelete moves to PreparingDelete (True when that
        changed the pod); otherwise the pod is deleted (True)."""
        pre_delete = lifecycle.hook(self.sts, "preDelete")
        if lifecycle.is_hooked(pre_delete, pod):
            mark = bool((pre_delete or {}).get("markPodNotReady"))
            return lifecycle.update_state(
                self.p.writer, pod, keys.PREPARING_DELETE, mark_not_ready=mark
            )
        try:
            self.p.writer.delete(PODS, pod, msg="delete pod", pod=name_of(pod))
        except NotFound:
            return True
        except ApiError as err:
            self._event(WARNING, "FailedDelete", f"failed to delete pod {name_of(pod)}: {err}")
            raise
        self._event(
            NORMAL,
            "SuccessfulDelete",
            f"delete Pod {name_of(pod)} in StatefulSet {self.name} successful",
        )
        return True

    # -- PVC retention -----------------------------------------------------------------------

    def _policy(self) -> tuple[str, str]:
        policy = _spec(self.sts).get("persistentVolumeClaimRetentionPolicy") or {}
        return policy.get("whenDeleted") or "Retain", policy.get("whenScaled") or "Retain"

    def _claim_owner_refs(self, claim: Obj, *, pod_uid: str, ordinal: int) -> list[Obj]:
        """updateClaimOwnerRefForSetAndPod: the owner references a claim should carry."""
        when_deleted, when_scaled = self._policy()
        set_ref = {
            "apiVersion": STATEFULSETS.api_version,
            "kind": "StatefulSet",
            "name": self.name,
            "uid": uid_of(self.sts),
        }
        pod_ref = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": naming.statefulset_pod_name(self.name, ordinal),
            "uid": pod_uid,
        }
        scaled_down = ordinal not in set(wanted_ordinals(self.sts))
        others = [
            r
            for r in (claim.get("metadata") or {}).get("ownerReferences") or []
            if r.get("uid") not in (uid_of(self.sts), pod_uid)
        ]
        refs = list(others)
        if when_deleted == DELETE and not (when_scaled == DELETE and scaled_down):
            refs.append(set_ref)
        if when_scaled == DELETE and scaled_down and pod_uid:
            refs.append(pod_ref)
        return refs

    def _retention(self, pod: Obj) -> None:
        """Bring the pod's PVCs' owner references in line with the retention policy."""
        if not _spec(self.sts).get("persistentVolumeClaimRetentionPolicy"):
            return
        ordinal = ordinal_of(pod)
        for tpl in _spec(self.sts).get("volumeClaimTemplates") or []:
            tname = (tpl.get("metadata") or {}).get("name", "")
            claim = self.p.pvcs.get(self.ns, naming.pvc_name(tname, self.name, ordinal))
            if claim is None or deleting(claim):
                continue
            refs = self._claim_owner_refs(claim, pod_uid=uid_of(pod), ordinal=ordinal)
            have = claim["metadata"].get("ownerReferences") or []
            if {r.get("uid") for r in refs} == {r.get("uid") for r in have}:
                continue
            self.p.writer.patch(
                PVCS,
                claim,
                {"metadata": {"ownerReferences": refs or None}},
                strategic=False,
                msg="update pvc owner references (retention policy)",
                pod=name_of(pod),
            )

    # -- status -------------------------------------------------------------------------------

    def status(self, pods: list[Obj]) -> Obj:
        """The status kruise computes from the pods listed at the start of the pass."""
        min_ready = _min_ready(self.sts)
        counts = dict.fromkeys(("replicas", "ready", "available", "current", "updated", "ur"), 0)
        for pod in pods:
            counts["replicas"] += 1
            if is_running(pod) and is_ready(pod):
                counts["ready"] += 1
                counts["ur"] += _revision(pod) == self.update_revision
                wait = available_in(pod, min_ready, self.p.now)
                counts["available"] += wait is not None and wait <= 0
            if _created(pod) and not deleting(pod):
                counts["current"] += _revision(pod) == self.current_revision
                counts["updated"] += _revision(pod) == self.update_revision
        status: Obj = {
            "observedGeneration": (self.sts.get("metadata") or {}).get("generation", 0),
            "replicas": counts["replicas"],
            "readyReplicas": counts["ready"],
            "availableReplicas": counts["available"],
            "currentReplicas": counts["current"],
            "updatedReplicas": counts["updated"],
            "updatedReadyReplicas": counts["ur"],
            "currentRevision": self.current_revision,
            "updateRevision": self.update_revision,
            "collisionCount": (self.sts.get("status") or {}).get("collisionCount", 0),
            "labelSelector": selector_string(_spec(self.sts).get("selector")),
        }
        return status

    def write_status(self, status: Obj) -> None:
        """updateStatefulSetStatus: complete a finished rolling update, then write when a
        compared field changed (kruise does not compare updatedReadyReplicas)."""
        rolling = (_spec(self.sts).get("updateStrategy") or {}).get("type") or "RollingUpdate"
        if (
            rolling == "RollingUpdate"
            and status["updatedReplicas"] == status["replicas"]
            and status["readyReplicas"] == status["replicas"]
        ):
            status["currentReplicas"] = status["updatedReplicas"]
            status["currentRevision"] = self.update_revision
        old = self.sts.get("status") or {}
        differs = status["observedGeneration"] > old.get("observedGeneration", 0) or any(
            status[k] != old.get(k)
            for k in (
                "replicas",
                "currentReplicas",
                "readyReplicas",
                "availableReplicas",
                "updatedReplicas",
                "currentRevision",
                "updateRevision",
                "labelSelector",
            )
        )
        write_status(self.p, STATEFULSETS, self.sts, status, differs=differs)

    def _requeue_for_availability(self, pods: list[Obj]) -> None:
        min_ready = _min_ready(self.sts)
        if min_ready <= 0:
            return
        waits = [available_in(pod, min_ready, self.p.now) for pod in pods]
        pending = [w for w in waits if w is not None and w > 0]
        if pending:
            self.p.requeue(math.ceil(min(pending)) + 0.5)
