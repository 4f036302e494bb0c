"""Pod conditions kruise writes: its two readiness gates and the Ready condition it derives.

- ``KruisePodReady``: kruise's pod webhook adds the gate to every pod a kruise workload owns
  (webhook/pod/mutating/pod_readiness.go:29-38) and its pod-readiness controller sets the
  condition True when it is missing (controller/podreadiness/pod_readiness_controller.go:
  104-136). A lifecycle hook with ``markPodNotReady`` adds a ``{userAgent, key}`` message
  and turns it False, recomputing Ready (util/podreadiness/pod_readiness_utils.go:30-96).
(``InPlaceUpdateReady`` belongs to in-place updates: see :mod:`inplace`.)
"""

from __future__ import annotations

import json

from mochaos.doubles.kruise import keys
from mochaos.doubles.kruise.api import PODS, Obj
from mochaos.doubles.kruise.objects import condition, has_readiness_gate, now_rfc3339
from mochaos.doubles.kruise.writer import Writer

LIFECYCLE_AGENT = "Lifecycle"
PRE_DELETE_KEY = "preDeleteHook"
PRE_UPDATE_KEY = "preUpdateHook"


def set_pod_condition(pod: Obj, cond: Obj) -> None:
    """util.SetPodCondition: replace the condition of that type only when its status
    changes; append it when absent."""
    conditions = pod.setdefault("status", {}).setdefault("conditions", [])
    for i, current in enumerate(conditions):
        if current.get("type") == cond["type"]:
            if current.get("status") != cond["status"]:
                conditions[i] = cond
            return
    conditions.append(cond)


def _unready_gates(pod: Obj) -> list[str]:
    """Why each readiness gate of the pod is not True (the kubelet's messages)."""
    unready = []
    for gate in (pod.get("spec") or {}).get("readinessGates") or []:
        ctype = gate.get("conditionType")
        cond = condition(pod, ctype)
        if cond is None:
            unready.append(
                f"corresponding condition of pod readiness gate {ctype!r} does not exist."
            )
        elif cond.get("status") != "True":
            unready.append(
                f'the status of pod readiness gate "{ctype}" is not "True", but {cond["status"]}'
            )
    return unready


def set_pod_ready_condition(pod: Obj) -> None:
    """util.SetPodReadyCondition: Ready follows ContainersReady and every readiness gate."""
    if condition(pod, "Ready") is None:
        return
    containers = condition(pod, "ContainersReady")
    if containers is None or containers.get("status") != "True":
        return
    unready = _unready_gates(pod)
    ready: Obj = {"type": "Ready", "status": "True", "lastTransitionTime": now_rfc3339()}
    if unready:
        ready = {
            "type": "Ready",
            "status": "False",
            "reason": "ReadinessGatesNotReady",
            "message": ", ".join(unready),
            "lastTransitionTime": now_rfc3339(),
        }
    set_pod_condition(pod, ready)


def _messages(cond: Obj | None) -> list[Obj]:
    if cond is None or not cond.get("message"):
        return []
    try:
        data = json.loads(cond["message"])
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def _dump(messages: list[Obj]) -> str:
    ordered = sorted(messages, key=lambda m: (m.get("userAgent", ""), m.get("key", "")))
    return json.dumps(ordered, separators=(",", ":"))


def add_not_ready_key(writer: Writer, pod: Obj, key: str) -> None:
    """Turn KruisePodReady False with the message ``{Lifecycle, key}`` and recompute Ready."""
    if not has_readiness_gate(pod, keys.KRUISE_POD_READY):
        return
    cond = condition(pod, keys.KRUISE_POD_READY)
    msg = {"userAgent": LIFECYCLE_AGENT, "key": key}
    if cond is not None and cond.get("status") != "True" and msg in _messages(cond):
        return

    def mutate(current: Obj) -> bool:
        existing = condition(current, keys.KRUISE_POD_READY)
        messages = _messages(existing)
        if existing is None:
            conds = current.setdefault("status", {}).setdefault("conditions", [])
            conds.append(
                {
                    "type": keys.KRUISE_POD_READY,
                    "status": "False",
                    "message": _dump([msg]),
                    "lastTransitionTime": now_rfc3339(),
                }
            )
        else:
            if msg in messages:
                return False
            existing["status"] = "False"
            existing["message"] = _dump([*messages, msg])
            existing["lastTransitionTime"] = now_rfc3339()
        set_pod_ready_condition(current)
        return True

    writer.update_fresh(PODS, pod, mutate, msg="mark pod not ready", sub="status", pod_key=key)


def remove_not_ready_key(writer: Writer, pod: Obj, key: str) -> None:
    """Drop the message ``{Lifecycle, key}``; KruisePodReady turns True when none is left."""
    if not has_readiness_gate(pod, keys.KRUISE_POD_READY):
        return
    msg = {"userAgent": LIFECYCLE_AGENT, "key": key}

    def mutate(current: Obj) -> bool:
        existing = condition(current, keys.KRUISE_POD_READY)
        messages = _messages(existing)
        if existing is None or msg not in messages:
            return False
        rest = [m for m in messages if m != msg]
        if not rest:
            existing["status"] = "True"
        existing["message"] = _dump(rest) if rest else ""
        existing["lastTransitionTime"] = now_rfc3339()
        return True

    writer.update_fresh(PODS, pod, mutate, msg="restore pod readiness", sub="status", pod_key=key)


def ensure_kruise_pod_ready(writer: Writer, pod: Obj) -> None:
    """The pod-readiness controller: a pod with the KruisePodReady gate and no such
    condition gets it, True."""
    if not has_readiness_gate(pod, keys.KRUISE_POD_READY):
        return
    if condition(pod, keys.KRUISE_POD_READY) is not None:
        return

    def mutate(current: Obj) -> bool:
        if condition(current, keys.KRUISE_POD_READY) is not None:
            return False
        conds = current.setdefault("status", {}).setdefault("conditions", [])
        conds.append(
            {"type": keys.KRUISE_POD_READY, "status": "True", "lastTransitionTime": now_rfc3339()}
        )
        return True

    writer.update_fresh(PODS, pod, mutate, msg="set pod readiness condition", sub="status")


def kubelet_ready(pod: Obj) -> tuple[str, str, str] | None:
    """The Ready condition a kubelet would report (status, reason, message): ContainersReady
    and every readiness gate True. None when the pod has no ContainersReady condition yet.

    A stand-in for a kubelet duty kwok lacks: kwok marks a pod's conditions once, when it
    starts, and never re-evaluates the readiness gates, so a gate that turns False and back
    True (KruisePodReady after markPodNotReady, InPlaceUpdateReady after an in-place update,
    the operator's ``matrixorigin.io/cn-store``) would leave Ready stale."""
    containers = condition(pod, "ContainersReady")
    if containers is None:
        return None
    if containers.get("status") != "True":
        return "False", "ContainersNotReady", ""
    unready = _unready_gates(pod)
    if unready:
        return "False", "ReadinessGatesNotReady", ", ".join(unready)
    return "True", "", ""


def sync_ready(writer: Writer, pod: Obj) -> None:
    """Bring the pod's Ready condition in line with :func:`kubelet_ready`."""
    want = kubelet_ready(pod)
    ready = condition(pod, "Ready")
    if want is None or (ready is not None and ready.get("status") == want[0]):
        return

    def mutate(current: Obj) -> bool:
        expected = kubelet_ready(current)
        existing = condition(current, "Ready")
        if expected is None or (existing is not None and existing.get("status") == expected[0]):
            return False
        status, reason, message = expected
        cond: Obj = {"type": "Ready", "status": status, "lastTransitionTime": now_rfc3339()}
        if reason:
            cond.update(reason=reason, message=message)
        conditions = current.setdefault("status", {}).setdefault("conditions", [])
        if existing is None:
            conditions.append(cond)
        else:
            conditions[conditions.index(existing)] = cond
        return True

    writer.update_fresh(
        PODS, pod, mutate, msg=f"pod Ready {want[0]} (kubelet stand-in)", sub="status"
    )
