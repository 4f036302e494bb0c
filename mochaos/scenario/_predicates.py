"""Every predicate a scenario waits on: named functions of the recorded state.

A predicate is a plain function ``State -> bool`` with a ``name`` attribute; triggers wait
on them and the gate re-evaluates them just before the write they gated. Here are the
topology's (pools with Idle pods, Bound claims, deletion costs), the migration's phases in
state-machine order (target bound → source draining → source reclaimed → completed) and
the lost pod's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mochaos.ctrl.objects import (
    CLAIMED_BY_LABEL,
    CLAIMSET_LABEL,
    DELETION_COST_ANNOTATION,
    PHASE_LABEL,
    POOL_NAME_LABEL,
    deleting,
    labels_of,
)
from mochaos.observe.history import State

Predicate = Callable[[State], bool]


def named(name: str, fn: Predicate) -> Predicate:
    """Attach a human-readable name to a predicate (shown in records and reports)."""
    fn.name = name  # type: ignore[attr-defined]
    return fn


def name_of(pred: Predicate) -> str:
    """The predicate's name (its function name when unnamed)."""
    return getattr(pred, "name", getattr(pred, "__name__", "predicate"))


def all_of(*preds: Predicate) -> Predicate:
    """Every predicate holds (named after them)."""
    return named(" and ".join(name_of(p) for p in preds), lambda s: all(p(s) for p in preds))


def pod_phase(state: State, pod: str) -> str | None:
    """The pod's pool phase label, or None when the pod does not exist."""
    obj = state.get("Pod", pod)
    return None if obj is None else labels_of(obj).get(PHASE_LABEL, "")


def claim_spec(state: State, claim: str) -> dict[str, Any]:
    """The claim's spec ({} when the claim does not exist)."""
    obj = state.get("CNClaim", claim)
    return (obj or {}).get("spec") or {}


def pod_has_phase(pod: str, phase: str) -> Predicate:
    """Pod ``pod`` carries phase label ``phase``."""
    return named(f"pod {pod} is {phase}", lambda s: pod_phase(s, pod) == phase)


def claim_bound(claim: str) -> Predicate:
    """Claim is in phase Bound with a pod named in its spec."""

    def check(s: State) -> bool:
        obj = s.get("CNClaim", claim)
        return bool(
            obj
            and (obj.get("status") or {}).get("phase") == "Bound"
            and (obj.get("spec") or {}).get("podName")
        )

    return named(f"claim {claim} Bound", check)


def target_bound(claim: str, target: str) -> Predicate:
    """Migration phase 1: the target pod is Bound and labelled for the migrating claim."""

    def check(s: State) -> bool:
        pod = s.get("Pod", target)
        return bool(
            pod
            and labels_of(pod).get(PHASE_LABEL) == "Bound"
            and labels_of(pod).get(CLAIMED_BY_LABEL) == claim
            and claim_spec(s, claim).get("podName") == target
        )

    return named("target-bound", check)


def source_draining(claim: str, source: str) -> Predicate:
    """Migration phase 2: the source pod is Draining while the claim still migrates."""

    def check(s: State) -> bool:
        src = (claim_spec(s, claim).get("sourcePod") or {}).get("podName")
        return src == source and pod_phase(s, source) == "Draining"

    return named("source-draining", check)


def source_reclaimed(claim: str, source: str) -> Predicate:
    """Migration phase 3: the source is back to Idle (or Terminating/gone), claim not done yet."""

    def check(s: State) -> bool:
        src = (claim_spec(s, claim).get("sourcePod") or {}).get("podName")
        return src == source and pod_phase(s, source) in ("Idle", "Terminating", None)

    return named("source-reclaimed", check)


def migration_complete(claim: str, target: str) -> Predicate:
    """Migration phase 4: sourcePod cleared and the store reports the target pod."""

    def check(s: State) -> bool:
        obj = s.get("CNClaim", claim)
        if obj is None:
            return False
        spec = obj.get("spec") or {}
        store = ((obj.get("status") or {}).get("store") or {}).get("string")
        return not spec.get("sourcePod") and spec.get("podName") == target and store == target

    return named("migration-complete", check)


MIGRATION_PHASES: dict[str, Callable[[str, str, str], Predicate]] = {
    "target-bound": lambda claim, source, target: target_bound(claim, target),
    "source-draining": lambda claim, source, target: source_draining(claim, source),
    "source-reclaimed": lambda claim, source, target: source_reclaimed(claim, source),
    "completed": lambda claim, source, target: migration_complete(claim, target),
}
"""Phase name -> predicate factory(claim, source, target), in state-machine order."""


def idle_pods_at_least(pool: str, n: int) -> Predicate:
    """At least ``n`` live pods of ``pool`` are Idle."""

    def check(s: State) -> bool:
        idle = [
            p
            for p in s.all("Pod").values()
            if labels_of(p).get(POOL_NAME_LABEL) == pool
            and labels_of(p).get(PHASE_LABEL) == "Idle"
            and not deleting(p)
        ]
        return len(idle) >= n

    return named(f"{n} Idle pods in pool {pool}", check)


def bound_of(state: State, claimset: str) -> list[str]:
    """Live claims of ``claimset`` that are Bound to a pod."""
    return [
        name
        for name, c in state.all("CNClaim").items()
        if labels_of(c).get(CLAIMSET_LABEL) == claimset
        and not deleting(c)
        and (c.get("status") or {}).get("phase") == "Bound"
        and (c.get("spec") or {}).get("podName")
    ]


def bound_claims_at_least(claimset: str, n: int) -> Predicate:
    """At least ``n`` live claims of ``claimset`` are Bound."""
    return named(f"{n} Bound claims in claim set {claimset}",
                 lambda s: len(bound_of(s, claimset)) >= n)  # fmt: skip


def bound_pods(state: State) -> list[str]:
    """Pods in pool phase Bound."""
    return [n for n, p in state.all("Pod").items() if labels_of(p).get(PHASE_LABEL) == "Bound"]


def all_returned(state: State) -> bool:
    """No claim is left and no pod is Bound: everything went back to the pool."""
    return not state.all("CNClaim") and not bound_pods(state)


def deletion_cost_is(pod: str, value: str) -> Predicate:
    """The store published ``value`` as the pod's deletion cost."""

    def check(s: State) -> bool:
        meta = (s.get("Pod", pod) or {}).get("metadata") or {}
        return (meta.get("annotations") or {}).get(DELETION_COST_ANNOTATION) == value

    return named(f"pod {pod} deletion cost {value}", check)


def held_by_set(pod: str, claimset: str) -> Predicate:
    """A claim of ``claimset`` has bound ``pod`` (its spec and the pod's label agree)."""

    def check(s: State) -> bool:
        obj = s.get("Pod", pod)
        holder = labels_of(obj).get(CLAIMED_BY_LABEL) if obj else None
        claim = s.get("CNClaim", holder) if holder else None
        return bool(
            claim
            and labels_of(claim).get(CLAIMSET_LABEL) == claimset
            and (claim.get("spec") or {}).get("podName") == pod
        )

    return named(f"pod {pod} bound by a claim of {claimset}", check)


def pod_unlabelled(pod: str, key: str = CLAIMED_BY_LABEL) -> Predicate:
    """Pod ``pod`` exists and carries no label ``key``."""

    def check(s: State) -> bool:
        obj = s.get("Pod", pod)
        return obj is not None and key not in labels_of(obj)

    return named(f"pod {pod} has no {key}", check)


def claim_deleting_in(claimset: str) -> Predicate:
    """A claim of ``claimset`` is being deleted (its finalizer not released yet)."""
    return named(
        f"a claim of {claimset} is finalizing",
        lambda s: any(labels_of(c).get(CLAIMSET_LABEL) == claimset and deleting(c)
                      for c in s.all("CNClaim").values()),
    )  # fmt: skip
