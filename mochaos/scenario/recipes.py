"""Reusable set-ups of the suites: the seed race's pool and claim sets.

docs/operator-behaviour.md §11.3 and the bug report's own reproduction: claim X of
set S1 is migrated onto the pod B of claim Z (set S2), then S1 is scaled in
while X's source drains. Y's pod serves one session, so the operator's own
deletion-cost tie-breaker — not creation-time luck — decides which claim a
scale-in prefers: the migrating X, whose target B has no sessions yet (docs/bugs.md#b2).
"""

from __future__ import annotations

from dataclasses import dataclass

from mochaos.ctrl.objects import (
    CLAIMED_BY_LABEL,
    CLAIMSET_LABEL,
    DELETION_COST_ANNOTATION,
    labels_of,
)
from mochaos.observe.history import State
from mochaos.scenario.engine import Scenario
from mochaos.scenario.predicates import Predicate, named, source_draining


@dataclass(frozen=True)
class SeedTopology:
    """Names in the seed race: claims X, Y (set S1), Z (set S2) and their pods A, C, B."""

    x: str
    y: str
    z: str
    a: str
    b: str
    c: str


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


def build_s1(sc: Scenario, *, max_idle: int = 2) -> tuple[str, str]:
    """A pool with idle pods and S1 = {X, Y} bound; Y's pod serves one session."""
    sc.pool("pool", max_idle=max_idle)
    x, y = sc.claimset("s1", replicas=2)
    c = sc.pod_of(y)
    sc.set_sessions(c, 1)
    sc.wait(deletion_cost_is(c, "1"), timeout=sc.waits.deletion_cost)
    return x, y


def build_seed(sc: Scenario) -> SeedTopology:
    """S1 = {X, Y} and S2 = {Z}, all bound; Y's pod serves one session.

    Independent waits overlap: the pool warms up three idle pods at once (one warm-up,
    not one per claim set) and both sets bind from them together. C's deletion cost is
    awaited before returning: a scale-in before the store published it would let
    creation-time luck, not sessions, pick the victim. So is the operator's pass that
    follows each bind (:meth:`Workload.settled`): the race starts on settled claims, as
    in production. The topology means the same as building the sets one by one.
    """
    sc.pool("pool", max_idle=3)
    sc.claimset("s1", replicas=2, wait=False)
    sc.claimset("s2", replicas=1, wait=False)
    x, y = sc.bound_claims("s1", 2)
    (z,) = sc.bound_claims("s2", 1)
    c = sc.pod_of(y)
    sc.set_sessions(c, 1)
    sc.wait(deletion_cost_is(c, "1"), timeout=sc.waits.deletion_cost)
    sc.workload.settled([x, y, z])
    return SeedTopology(x=x, y=y, z=z, a=sc.pod_of(x), b=sc.pod_of(z), c=c)


def scale_in_during_migration(sc: Scenario, seed: SeedTopology) -> None:
    """The seed's fault and end: X migrates onto Z's pod B, S1 is scaled in once X's source
    A is Draining; then settle, epilogue, verdict (the suite's own scenario, for the
    framework's tests that wrap it in a fault of their own)."""
    sc.agent.request_migration(seed.x, target=seed.b)
    draining = sc.when(source_draining(seed.x, seed.a), timeout=sc.waits.migration_phase)
    sc.scale_claimset("s1", replicas=1, trigger=draining)
    sc.settle()
    sc.epilogue()
    sc.verdict()
