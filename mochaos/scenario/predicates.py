"""Named predicates over the recorded state, one per phase of the migration state machine.

A predicate is a plain function ``State -> bool`` with a ``name`` attribute;
triggers wait on them and the window check re-evaluates them at the
resourceVersion of our write. The migration phases, in order:
target bound → source draining → source reclaimed → completed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mochaos.ctrl.objects import CLAIMED_BY_LABEL, PHASE_LABEL, labels_of
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
