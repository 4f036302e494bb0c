"""single-binding (#581, symptom 2): the operator never adds a reference to a held pod.

A violation is an operator write creating a NEW reference to a pod another live
claim already holds (by spec.podName or by the claimed-by label): a claim's
spec.podName set to it, or its label handed to a claim whose spec does not name
it. A relabel that follows the claim's own spec.podName (a migration target
taken by Sync) is not new, and our own writes (the injected fault, the agent's
patch) are never violations by themselves. Instantaneous: no grace.
"""

from __future__ import annotations

from mochaos.invariants.base import InvariantBase
from mochaos.invariants.facts import CLAIM, POD, World, claimed_by, own_write_rvs, ref, spec_pod
from mochaos.types import Change, CheckOptions, History, Verdict


class SingleBinding(InvariantBase):
    """No operator write makes a second live claim reference a pod."""

    id = "single-binding"
    bugs = ("#581",)

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Fail at the first operator write that references an already-held pod."""
        ours = own_write_rvs(history)
        world = World()
        for change in history.changes():
            if change.kind not in (POD, CLAIM) or change.event == "DELETED":
                world.apply(change)
                continue
            if change.rv not in ours:
                verdict = self._judge(world, change)
                if verdict is not None:
                    return verdict
            world.apply(change)
        return self.passed("no operator write referenced a pod held by another live claim")

    def _judge(self, world: World, change: Change) -> Verdict | None:
        """Judge one operator change against the state just before it."""
        if change.kind == CLAIM:
            claim, pod = change.name, spec_pod(change.obj)
            before = world.claim(claim)
            if not pod or (before is not None and spec_pod(before) == pod):
                return None
            how = f"spec.podName of CNClaim {claim} set to {pod}"
        else:
            claim, pod = claimed_by(change.obj), change.name
            before = world.pod(pod)
            if not claim or (before is not None and claimed_by(before) == claim):
                return None
            own = world.claim(claim)
            if own is not None and spec_pod(own) == pod:
                return None
            how = f"pod {pod} labelled claimed-by={claim} while its spec.podName is not {pod}"
        holders = world.holders(pod, besides=claim)
        if not holders:
            return None
        return self.failed(
            t=change.t,
            seq=change.seq,
            objects=(ref(CLAIM, claim), ref(POD, pod), *(ref(CLAIM, h) for h in holders)),
            message=f"{how}, but live CNClaim {', '.join(holders)} already holds it",
        )


INVARIANT = SingleBinding()
