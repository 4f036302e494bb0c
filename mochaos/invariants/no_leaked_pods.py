"""no-leaked-pods (leaks, cleanup as an oracle): the epilogue returns every pod to the pool.

After the scenario's epilogue (all claim sets scaled to 0, ``Marker("epilogue")``)
the state at ``min(history end, epilogue + finalize_timeout)`` must have every
pool pod Idle, Draining, Terminating, being deleted or gone, and no CNClaim left at
all. A pod still ``Unknown`` is one the pool just created and the store has not
registered yet: warming up, not leaked.
"""

from __future__ import annotations

from mochaos.invariants.base import InvariantBase
from mochaos.invariants.facts import CLAIM, POD, World, finalizers, pod_phase, ref
from mochaos.types import (
    POOL_NAME_LABEL,
    Change,
    CheckOptions,
    History,
    Verdict,
    obj_deleting,
    obj_labels,
)

RELEASED_PHASES = frozenset({"Idle", "Draining", "Terminating", "Unknown"})


class NoLeakedPods(InvariantBase):
    """After the epilogue, no pool pod stays claimed and no CNClaim remains."""

    id = "no-leaked-pods"
    bugs = ()
    at_settle_only = True

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Judge the state one finalize_timeout after the epilogue (skipped while not final)."""
        if not final:
            return self.skipped("evaluated at settle")
        epilogue = next((m for m in history.markers() if m.label == "epilogue"), None)
        if epilogue is None:
            return self.skipped("no epilogue marker in the history")
        judged_at = min(history.end, epilogue.t + options.finalize_timeout)
        world = World()
        seq = epilogue.seq
        for entry in history:
            if entry.t > judged_at and entry.seq > epilogue.seq:
                break
            seq = max(seq, entry.seq)
            if isinstance(entry, Change):
                world.apply(entry)
        leaked = {
            name: pod_phase(pod) or "-"
            for name, pod in sorted(world.state.all(POD).items())
            if POOL_NAME_LABEL in obj_labels(pod)
            and pod_phase(pod) not in RELEASED_PHASES
            and not obj_deleting(pod)
        }
        claims = {
            name: ", ".join(finalizers(claim)) or "no finalizers"
            for name, claim in sorted(world.state.all(CLAIM).items())
        }
        if not leaked and not claims:
            return self.passed(f"pool pods released and no CNClaim left at t={judged_at:g}")
        parts = []
        if leaked:
            parts.append("leaked pods " + ", ".join(f"{n} ({p})" for n, p in leaked.items()))
        if claims:
            parts.append("leftover CNClaims " + ", ".join(f"{n} ({f})" for n, f in claims.items()))
        return self.failed(
            t=judged_at,
            seq=seq,
            objects=(*(ref(POD, n) for n in leaked), *(ref(CLAIM, n) for n in claims)),
            message=f"{judged_at - epilogue.t:g}s after the epilogue: " + "; ".join(parts),
        )


INVARIANT = NoLeakedPods()
