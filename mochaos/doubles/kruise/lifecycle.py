"""Pod lifecycle hooks (kruise util/lifecycle/lifecycle_utils.go at v1.4.0).

A workload's ``spec.lifecycle`` has ``preNormal``, ``preDelete`` and ``inPlaceUpdate``
hooks, each a ``labelsHandler`` map and a ``finalizersHandler`` list. A pod is *hooked* when
it carries any of them (``IsPodHooked``) and *all hooked* when it carries every one
(``IsPodAllHooked``). The state lives in the pod label ``lifecycle.apps.kruise.io/state``;
kruise moves it with a strategic merge patch that also stamps
``lifecycle.apps.kruise.io/timestamp``. With ``markPodNotReady`` the move to
PreparingDelete / PreparingUpdate first turns KruisePodReady False (Updated restores it).
"""

from __future__ import annotations

from mochaos.doubles.kruise import keys, readiness
from mochaos.doubles.kruise.api import PODS, Obj
from mochaos.doubles.kruise.objects import finalizers_of, labels_of, name_of, now_rfc3339
from mochaos.doubles.kruise.writer import Writer


def state_of(pod: Obj) -> str:
    """The pod's lifecycle state ("" when unset)."""
    return labels_of(pod).get(keys.LIFECYCLE_STATE, "")


def hook(workload: Obj, name: str) -> Obj | None:
    """``spec.lifecycle.<name>`` of a workload (None when absent)."""
    return ((workload.get("spec") or {}).get("lifecycle") or {}).get(name)


def is_hooked(hook_spec: Obj | None, pod: Obj) -> bool:
    """IsPodHooked: the pod carries any finalizer or label of the hook."""
    if not hook_spec:
        return False
    finalizers = set(finalizers_of(pod))
    if any(f in finalizers for f in hook_spec.get("finalizersHandler") or []):
        return True
    labels = labels_of(pod)
    return any(labels.get(k) == v for k, v in (hook_spec.get("labelsHandler") or {}).items())


def is_all_hooked(hook_spec: Obj | None, pod: Obj) -> bool:
    """IsPodAllHooked: the pod carries every finalizer and label of the hook (False for no
    hook, as in kruise)."""
    if not hook_spec:
        return False
    finalizers = set(finalizers_of(pod))
    if any(f not in finalizers for f in hook_spec.get("finalizersHandler") or []):
        return False
    labels = labels_of(pod)
    return all(labels.get(k) == v for k, v in (hook_spec.get("labelsHandler") or {}).items())


def marks_not_ready(workload: Obj) -> bool:
    """IsLifecycleMarkPodNotReady: the preDelete or inPlaceUpdate hook has markPodNotReady."""
    return any(
        bool((hook(workload, h) or {}).get("markPodNotReady"))
        for h in ("preDelete", "inPlaceUpdate")
    )


def stamp(pod: Obj, state: str) -> None:
    """SetPodLifecycle: set the state label and timestamp annotation on a pod being built."""
    pod["metadata"].setdefault("labels", {})[keys.LIFECYCLE_STATE] = state
    pod["metadata"].setdefault("annotations", {})[keys.LIFECYCLE_TIMESTAMP] = now_rfc3339()


def update_state(writer: Writer, pod: Obj, state: str, *, mark_not_ready: bool) -> bool:
    """UpdatePodLifecycle: apply the not-ready policy, then patch the state when it
    differs. True when the pod was patched."""
    if mark_not_ready:
        if state == keys.PREPARING_DELETE:
            readiness.add_not_ready_key(writer, pod, readiness.PRE_DELETE_KEY)
        elif state == keys.PREPARING_UPDATE:
            readiness.add_not_ready_key(writer, pod, readiness.PRE_UPDATE_KEY)
        elif state == keys.UPDATED:
            readiness.remove_not_ready_key(writer, pod, readiness.PRE_UPDATE_KEY)
    if state_of(pod) == state:
        return False
    patch = {
        "metadata": {
            "labels": {keys.LIFECYCLE_STATE: state},
            "annotations": {keys.LIFECYCLE_TIMESTAMP: now_rfc3339()},
        }
    }
    writer.patch(
        PODS,
        pod,
        patch,
        strategic=True,
        msg=f"pod lifecycle {state_of(pod) or '-'} -> {state}",
        pod=name_of(pod),
    )
    return True


def update_state_with_handler(writer: Writer, pod: Obj, state: str, hook_spec: Obj | None) -> bool:
    """UpdatePodLifecycleWithHandler: like :func:`update_state`, and put the hook's labels
    and finalizers back on the pod in the same strategic merge patch (finalizers merge)."""
    if hook_spec is None:
        return False
    if hook_spec.get("markPodNotReady") and state == keys.PREPARING_UPDATE:
        readiness.add_not_ready_key(writer, pod, readiness.PRE_UPDATE_KEY)
    if state_of(pod) == state:
        return False
    patch: Obj = {
        "metadata": {
            "labels": {keys.LIFECYCLE_STATE: state, **(hook_spec.get("labelsHandler") or {})},
            "annotations": {keys.LIFECYCLE_TIMESTAMP: now_rfc3339()},
            "finalizers": list(hook_spec.get("finalizersHandler") or []),
        }
    }
    writer.patch(
        PODS,
        pod,
        patch,
        strategic=True,
        msg=f"pod lifecycle {state_of(pod) or '-'} -> {state} (hook handlers restored)",
        pod=name_of(pod),
    )
    return True
