"""Objects seen by role, not by name: what makes a point found again in another run.

Generated names (``s1-f8rmm``, ``pool-z6djp``) differ from run to run; the role an
object plays in its workload ("migrating claim", "target pod") does not. An object's
*abstract attributes* are its state with every name it holds replaced by that name's role.
"""

from __future__ import annotations

from typing import Any

from mochaos.ctrl.objects import (
    CLAIM_FINALIZER,
    CLAIMED_BY_LABEL,
    CLAIMSET_LABEL,
    PHASE_LABEL,
    deleting,
    labels_of,
)
from mochaos.observe.history import State

KINDS = ("CNClaimSet", "CNClaim", "Pod")
"""The kinds whose transitions are injection points."""
EXISTS = "exists"
"""The attribute of an object's existence."""
ABSENT = "absent"
PRESENT = "present"
NONE = "-"
POOL_POD = "pool pod"
"""The role of a pod the workload did not name (pool pods come and go)."""


def role_of(kind: str, name: str, obj: dict[str, Any] | None, roles: dict[str, str]) -> str:
    """The role of one object: the workload's name for it, else one from its kind and set."""
    if name in roles:
        return roles[name]
    if kind == "Pod":
        return POOL_POD
    if kind == "CNClaim":
        owner = labels_of(obj or {}).get(CLAIMSET_LABEL)
        return f"new claim of {roles.get(owner, 'a set')}" if owner else "new claim"
    return f"new {kind}"


def _ref(kind: str, name: str | None, state: State, roles: dict[str, str]) -> str:
    """The role of the object a field names (``-`` when it names none)."""
    if not name:
        return NONE
    return role_of(kind, name, state.get(kind, name), roles)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def attributes(
    kind: str, obj: dict[str, Any], state: State, roles: dict[str, str]
) -> dict[str, str]:
    """The abstract attributes of one object (its existence aside)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if kind == "Pod":
        labels = labels_of(obj)
        return {
            "phase": labels.get(PHASE_LABEL) or NONE,
            "claimed-by": _ref("CNClaim", labels.get(CLAIMED_BY_LABEL), state, roles),
            "deleting": _yes(deleting(obj)),
        }
    if kind == "CNClaim":
        return {
            "phase": status.get("phase") or NONE,
            "pod": _ref("Pod", spec.get("podName"), state, roles),
            "source": _ref("Pod", (spec.get("sourcePod") or {}).get("podName"), state, roles),
            "store": _ref("Pod", (status.get("store") or {}).get("string"), state, roles),
            "migrating": _yes("migrate" in status),
            "deleting": _yes(deleting(obj)),
            "finalizer": _yes(
                CLAIM_FINALIZER in ((obj.get("metadata") or {}).get("finalizers") or [])
            ),
        }
    return {
        "replicas": str(status.get("replicas", NONE)),
        "ready": str(status.get("readyReplicas", NONE)),
        "deleting": _yes(deleting(obj)),
    }


def value(
    kind: str, attr: str, obj: dict[str, Any] | None, state: State, roles: dict[str, str]
) -> str:
    """One abstract attribute of an object (``exists``: present / absent)."""
    if attr == EXISTS:
        return PRESENT if obj is not None else ABSENT
    if obj is None:
        return ABSENT
    return attributes(kind, obj, state, roles).get(attr, NONE)


def references(kind: str, name: str, state: State) -> dict[str, list[str]]:
    """Names related to an object in ``state``: for a pod, the claims that name it (spec,
    source or label) and their sets; for a claim, its set and its pods."""
    if kind == "Pod":
        pod = state.get("Pod", name) or {}
        holder = labels_of(pod).get(CLAIMED_BY_LABEL)
        claims = sorted(
            c for c, obj in state.all("CNClaim").items()
            if c == holder
            or (obj.get("spec") or {}).get("podName") == name
            or ((obj.get("spec") or {}).get("sourcePod") or {}).get("podName") == name
        )  # fmt: skip
        sets = [labels_of(state.get("CNClaim", c) or {}).get(CLAIMSET_LABEL) for c in claims]
        return {"CNClaim": claims, "CNClaimSet": sorted({s for s in sets if s})}
    if kind == "CNClaim":
        claim = state.get("CNClaim", name) or {}
        spec = claim.get("spec") or {}
        pods = [spec.get("podName"), (spec.get("sourcePod") or {}).get("podName")]
        owner = labels_of(claim).get(CLAIMSET_LABEL)
        return {"Pod": sorted({p for p in pods if p}), "CNClaimSet": [owner] if owner else []}
    return {}
