"""no-leaked-pods (leaks, cleanup as an oracle): the epilogue returns every pod to the pool.

After the scenario's epilogue (all claim sets scaled to 0, ``Marker("epilogue")``)
the state at ``min(history end, epilogue + finalize_timeout)`` must have every
pool pod Idle, Draining, Terminating, being deleted or gone, and no CNClaim left at
all. A pod still ``Unknown`` is one the pool just created and the store has not
registered yet: warming up, not leaked.
"""

from __future__ import annotations

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import POOL_NAME_LABEL, deleting, labels_of
from mochaos.invariants.base import InvariantBase, Judge
from mochaos.invariants.facts import CLAIM, POD, Facts, Obj, finalizers, pod_phase, ref
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import Change, Entry, Marker, State

RELEASED_PHASES = frozenset({"Idle", "Draining", "Terminating", "Unknown"})


class NoLeakedPods(InvariantBase):
    """After the epilogue, no pool pod stays claimed and no CNClaim remains."""

    id = "no-leaked-pods"
    bugs = ()
    rank = 10
    at_settle_only = True

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Judge the state one finalize_timeout after the epilogue (skipped while not final)."""
        return _Judge(self, options, facts)


class _Judge(Judge):
    """Keeps the objects as of the epilogue and the entries after it, replayed at settle."""

    def __init__(self, invariant: InvariantBase, options: CheckOptions, facts: Facts) -> None:
        super().__init__(invariant, options, facts)
        self.epilogue: tuple[Marker, State] | None = None
        """The epilogue marker and the objects as of it."""
        self.since: list[Entry] = []

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if self.epilogue is not None:
            self.since.append(entry)
        elif isinstance(entry, Marker) and entry.label == "epilogue":
            self.epilogue = (entry, self.facts.world.state.copy())

    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        if not final:
            return self.invariant.skipped("evaluated at settle")
        if self.epilogue is None:
            return self.invariant.skipped("no epilogue marker in the history")
        epilogue, at_epilogue = self.epilogue
        judged_at = min(self.facts.end, epilogue.t + self.options.finalize_timeout)
        state = at_epilogue.copy()
        seq = epilogue.seq
        for entry in self.since:
            if entry.t > judged_at:
                break
            seq = max(seq, entry.seq)
            if isinstance(entry, Change):
                state.apply(entry)
        leaked = {
            name: pod_phase(pod) or "-"
            for name, pod in sorted(state.all(POD).items())
            if POOL_NAME_LABEL in labels_of(pod)
            and pod_phase(pod) not in RELEASED_PHASES
            and not deleting(pod)
        }
        claims = {
            name: ", ".join(finalizers(claim)) or "no finalizers"
            for name, claim in sorted(state.all(CLAIM).items())
        }
        if not leaked and not claims:
            return self.invariant.passed(
                f"pool pods released and no CNClaim left at t={judged_at:g}"
            )
        parts = []
        if leaked:
            parts.append("leaked pods " + ", ".join(f"{n} ({p})" for n, p in leaked.items()))
        if claims:
            parts.append("leftover CNClaims " + ", ".join(f"{n} ({f})" for n, f in claims.items()))
        return self.invariant.failed(
            t=judged_at,
            seq=seq,
            objects=(*(ref(POD, n) for n in leaked), *(ref(CLAIM, n) for n in claims)),
            message=f"{judged_at - epilogue.t:g}s after the epilogue: " + "; ".join(parts),
        )


INVARIANT = NoLeakedPods()
