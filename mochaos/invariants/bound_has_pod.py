"""bound-has-pod (B3): a Bound claim's pod exists; a Lost claim keeps no spec.podName.

Two breaches of a live claim, each failing when it persists longer than
``grace``: (i) phase Bound while the pod named by spec.podName does not exist;
(ii) phase Lost while spec.podName is still set (B3: Lost keeps the pod name).
"""

from __future__ import annotations

from mochaos.invariants.base import Deadlines, InvariantBase
from mochaos.invariants.facts import CLAIM, POD, World, claim_phase, ref, spec_pod
from mochaos.types import Change, CheckOptions, History, Verdict

_MISSING_POD = "Bound on a pod that does not exist"
_LOST_WITH_POD = "Lost but still has spec.podName"


class BoundHasPod(InvariantBase):
    """A live Bound claim names an existing pod; a live Lost claim names none."""

    id = "bound-has-pod"
    bugs = ("B3",)

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Fail at the first breach that outlived the grace period."""
        world = World()
        breaches = Deadlines()
        for entry in history:
            late = breaches.expired(entry.t)
            if late is not None:
                claim, what = late.detail
                pod = spec_pod(world.claim(claim) or {})
                return self.failed(
                    t=late.deadline,
                    seq=entry.seq,
                    objects=(ref(CLAIM, claim), ref(POD, pod)),
                    message=f"CNClaim {claim} {what} ({pod}) for over {options.grace:g}s",
                )
            if not isinstance(entry, Change) or entry.kind not in (POD, CLAIM):
                continue
            world.apply(entry)
            claims = [entry.name] if entry.kind == CLAIM else world.claims_naming(entry.name)
            for claim in claims:
                obj = world.live_claim(claim)
                pod = spec_pod(obj) if obj is not None else ""
                phase = claim_phase(obj) if obj is not None else ""
                for what, broken in (
                    (_MISSING_POD, phase == "Bound" and bool(pod) and world.pod(pod) is None),
                    (_LOST_WITH_POD, phase == "Lost" and bool(pod)),
                ):
                    if broken:
                        breaches.open(
                            (claim, what),
                            start=entry.t,
                            within=options.grace,
                            seq=entry.seq,
                            detail=(claim, what),
                        )
                    else:
                        breaches.close((claim, what))
        return self.passed(breaches.summary("breach(es) seen"))


INVARIANT = BoundHasPod()
