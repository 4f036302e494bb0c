"""Helpers over plain-dict objects: metadata, owner references, label selectors (matching and
their canonical string), int-or-percent values, and the pod predicates of k8s' podutil.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from mochaos.ctrl.objects import (
    annotations_of,
    deleting,
    labels_of,
    meta,
    name_of,
    selector_matches,
)
from mochaos.doubles.kruise.api import Obj, Resource

# The shared helpers come from mochaos.ctrl.objects (one implementation).
__all__ = [
    "annotations_of",
    "available_in",
    "condition",
    "controller_of",
    "controller_ref",
    "deleting",
    "finalizers_of",
    "has_readiness_gate",
    "int_or_percent",
    "is_active",
    "is_available",
    "is_ready",
    "is_running",
    "labels_of",
    "meta",
    "name_of",
    "namespace_of",
    "now_rfc3339",
    "owned_by",
    "parse_time",
    "ready_since",
    "selector_matches",
    "selector_string",
    "uid_of",
]


def namespace_of(obj: Obj) -> str:
    """metadata.namespace."""
    return (obj.get("metadata") or {}).get("namespace", "")


def uid_of(obj: Obj) -> str:
    """metadata.uid."""
    return (obj.get("metadata") or {}).get("uid", "")


def finalizers_of(obj: Obj) -> list[str]:
    """metadata.finalizers (empty when absent)."""
    return (obj.get("metadata") or {}).get("finalizers") or []


def controller_ref(owner: Obj, res: Resource) -> Obj:
    """metav1.NewControllerRef: an owner reference with controller and blockOwnerDeletion."""
    return {
        "apiVersion": res.api_version,
        "kind": res.kind,
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Obj) -> Obj | None:
    """The owner reference with ``controller: true``, if any (metav1.GetControllerOf)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def owned_by(obj: Obj, owner_uid: str) -> bool:
    """Whether ``obj``'s controller reference points at ``owner_uid``."""
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == owner_uid


def selector_string(selector: Obj | None) -> str:
    """``labels.Selector.String()`` of ``metav1.LabelSelectorAsSelector``: requirements sorted
    by key, ``k=v``, ``k in (a,b)``, ``k notin (a)``, ``k``, ``!k``, comma-joined."""
    reqs: list[tuple[str, str]] = []
    for key, value in (selector or {}).get("matchLabels", {}).items():
        reqs.append((key, f"{key}={value}"))
    for expr in (selector or {}).get("matchExpressions") or []:
        key, op = expr["key"], expr["operator"]
        values = ",".join(sorted(expr.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }[op]
        reqs.append((key, text))
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


def int_or_percent(value: Any, total: int, *, round_up: bool) -> int:
    """intstr.GetValueFromIntOrPercent: an int as is, ``"N%"`` of ``total`` rounded up or
    down, a digit string as an int."""
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        scaled = int(text[:-1]) * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    return int(text)


def parse_time(raw: str | None) -> datetime | None:
    """An RFC3339 timestamp as an aware datetime (None when absent)."""
    if not raw:
        return None
    return datetime.fromisoformat(raw.replace("Z", "+00:00"))


def now_rfc3339() -> str:
    """The current time the way Kubernetes writes metav1.Time (seconds, UTC)."""
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(pod: Obj, ctype: str) -> Obj | None:
    """The pod status condition of type ``ctype``."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def has_readiness_gate(pod: Obj, ctype: str) -> bool:
    """Whether spec.readinessGates lists ``ctype``."""
    gates = (pod.get("spec") or {}).get("readinessGates") or []
    return any(g.get("conditionType") == ctype for g in gates)


def is_active(pod: Obj) -> bool:
    """kubecontroller.IsPodActive: not Succeeded/Failed and not deleting."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not deleting(pod)


def is_ready(pod: Obj) -> bool:
    """podutil.IsPodReady: condition Ready is True."""
    cond = condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def is_running(pod: Obj) -> bool:
    """status.phase is Running."""
    return (pod.get("status") or {}).get("phase") == "Running"


def ready_since(pod: Obj) -> datetime | None:
    """lastTransitionTime of a True Ready condition (None when not ready)."""
    cond = condition(pod, "Ready")
    if cond is None or cond.get("status") != "True":
        return None
    return parse_time(cond.get("lastTransitionTime"))


def available_in(pod: Obj, min_ready_seconds: int, now: datetime) -> float | None:
    """Seconds until podutil.IsPodAvailable(pod, minReadySeconds) turns true: 0 when it
    is available, None when it is not Running and Ready."""
    if not (is_running(pod) and is_ready(pod)):
        return None
    if min_ready_seconds <= 0:
        return 0.0
    since = ready_since(pod)
    if since is None:
        return float(min_ready_seconds)
    return max(0.0, since.timestamp() + min_ready_seconds - now.timestamp())


def is_available(pod: Obj, min_ready_seconds: int, now: datetime) -> bool:
    """Running, Ready, and Ready for ``min_ready_seconds`` (IsRunningAndAvailable)."""
    wait = available_in(pod, min_ready_seconds, now)
    return wait is not None and wait <= 0
