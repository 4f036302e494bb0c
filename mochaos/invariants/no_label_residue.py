"""no-label-residue (B5, B4): a ``claimed-by=X`` label needs a live claim X referencing the pod.

X references a pod by spec.podName or, while migrating, by spec.sourcePod; a claim that is
still binding holds the ``Bound`` pod its bind labelled (its orphan, adopted on its next
pass) until it can name it. A breach counts only when it lasts longer than ``grace`` without
interruption, so the short windows of a normal finalize or reclaim pass.
"""

from __future__ import annotations

from mochaos.config import CheckOptions
from mochaos.invariants.base import DeadlineJudge, InvariantBase, Obligation
from mochaos.invariants.facts import (
    CLAIM,
    POD,
    Facts,
    Obj,
    World,
    binding,
    claim_refs,
    claimed_by,
    pod_phase,
    ref,
)
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import Change, Entry


class NoLabelResidue(InvariantBase):
    """Every pod labelled claimed-by=X has a live claim X that references it."""

    id = "no-label-residue"
    bugs = ("B5", "B4")
    rank = 2

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the first label breach that outlived the grace period."""
        return _Judge(self, options, facts)


class _Judge(DeadlineJudge):
    seen = "label breach(es) seen"

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if not isinstance(entry, Change) or entry.kind not in (POD, CLAIM):
            return
        world = self.facts.world
        # A pod that is gone has no label: judging it only closes what it had.
        pods = world.pods_labelled(entry.name) if entry.kind == CLAIM else [entry.name]
        if entry.kind == POD and prev is not None and claimed_by(prev):
            old = claimed_by(prev)
            if entry.event == "DELETED" or claimed_by(entry.obj) != old:
                self.deadlines.close((entry.name, old))
        for pod in pods:
            label = claimed_by(world.pod(pod) or {})
            if _breach(world, pod, label) is None:
                self.deadlines.close((pod, label))
            else:
                self.deadlines.open(
                    (pod, label),
                    start=entry.t,
                    within=self.options.grace,
                    detail=(pod, label),
                )

    def overdue(self, late: Obligation, seq: int) -> Verdict:
        pod, claim = late.detail
        return self.invariant.failed(
            t=late.deadline,
            seq=seq,
            objects=(ref(POD, pod), ref(CLAIM, claim)),
            message=(
                f"pod {pod} labelled claimed-by={claim} for over {self.options.grace:g}s "
                f"while {_breach(self.facts.world, pod, claim)}"
            ),
        )


def _breach(world: World, pod: str, label: str) -> str | None:
    """Why ``pod``'s label ``claimed-by=<label>`` is a breach now, or None when it is not."""
    if not label:
        return None
    claim = world.claim(label)
    if claim is None:
        return f"CNClaim {label} does not exist"
    if world.live_claim(label) is None:
        return f"CNClaim {label} is being deleted"
    if pod in claim_refs(claim):
        return None
    if binding(claim) and pod_phase(world.pod(pod) or {}) == "Bound":
        return None  # its bind in progress (e.g. HAKeeper unreachable): the orphan it adopts
    return f"CNClaim {label} does not reference it"


INVARIANT = NoLabelResidue()
