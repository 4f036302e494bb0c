"""no-label-residue (B5, B4): a ``claimed-by=X`` label needs a live claim X referencing the pod.

X references a pod by spec.podName or, while migrating, by spec.sourcePod. A
breach counts only when it lasts longer than ``grace`` without interruption, so
the short windows of a normal finalize or reclaim pass.
"""

from __future__ import annotations

from mochaos.invariants.base import Deadlines, InvariantBase
from mochaos.invariants.facts import CLAIM, POD, World, claim_refs, claimed_by, ref
from mochaos.types import Change, CheckOptions, History, Verdict


class NoLabelResidue(InvariantBase):
    """Every pod labelled claimed-by=X has a live claim X that references it."""

    id = "no-label-residue"
    bugs = ("B5", "B4")

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Fail at the first label breach that outlived the grace period."""
        world = World()
        breaches = Deadlines()
        for entry in history:
            late = breaches.expired(entry.t)
            if late is not None:
                pod, claim = late.detail
                return self.failed(
                    t=late.deadline,
                    seq=entry.seq,
                    objects=(ref(POD, pod), ref(CLAIM, claim)),
                    message=(
                        f"pod {pod} labelled claimed-by={claim} for over {options.grace:g}s "
                        f"while {_breach(world, pod, claim)}"
                    ),
                )
            if not isinstance(entry, Change) or entry.kind not in (POD, CLAIM):
                continue
            before = world.apply(entry)
            if entry.kind == CLAIM:
                pods = world.pods_labelled(entry.name)
            elif entry.event == "DELETED":
                pods = []
            else:
                pods = [entry.name]
            if entry.kind == POD and before is not None and claimed_by(before):
                old = claimed_by(before)
                if entry.event == "DELETED" or claimed_by(entry.obj) != old:
                    breaches.close((entry.name, old))
            for pod in pods:
                label = claimed_by(world.pod(pod) or {})
                if _breach(world, pod, label) is None:
                    breaches.close((pod, label))
                else:
                    breaches.open(
                        (pod, label),
                        start=entry.t,
                        within=options.grace,
                        seq=entry.seq,
                        detail=(pod, label),
                    )
        return self.passed(breaches.summary("label breach(es) seen"))


def _breach(world: World, pod: str, label: str) -> str | None:
    """Why ``pod``'s label ``claimed-by=<label>`` is a breach now, or None when it is not."""
    if not label:
        return None
    claim = world.claim(label)
    if claim is None:
        return f"CNClaim {label} does not exist"
    if world.live_claim(label) is None:
        return f"CNClaim {label} is being deleted"
    if pod not in claim_refs(claim):
        return f"CNClaim {label} does not reference it"
    return None


INVARIANT = NoLabelResidue()
