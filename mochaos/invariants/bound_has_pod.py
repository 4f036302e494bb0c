"""bound-has-pod (B3): a Bound claim's pod exists; a Lost claim keeps no spec.podName.

Two breaches of a live claim, each failing when it persists longer than
``grace``: (i) phase Bound while the pod named by spec.podName does not exist;
(ii) phase Lost while spec.podName is still set (B3: Lost keeps the pod name).
"""

from __future__ import annotations

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import claim_phase
from mochaos.invariants.base import DeadlineJudge, InvariantBase, Obligation
from mochaos.invariants.facts import CLAIM, POD, Facts, Obj, ref, spec_pod
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import Change, Entry

_MISSING_POD = "Bound on a pod that does not exist"
_LOST_WITH_POD = "Lost but still has spec.podName"


class BoundHasPod(InvariantBase):
    """A live Bound claim names an existing pod; a live Lost claim names none."""

    id = "bound-has-pod"
    bugs = ("B3",)
    rank = 4

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the first breach that outlived the grace period."""
        return _Judge(self, options, facts)


class _Judge(DeadlineJudge):
    seen = "breach(es) seen"

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if not isinstance(entry, Change) or entry.kind not in (POD, CLAIM):
            return
        world = self.facts.world
        claims = [entry.name] if entry.kind == CLAIM else world.claims_naming(entry.name)
        for claim in claims:
            obj = world.live_claim(claim) or {}
            pod, phase = spec_pod(obj), claim_phase(obj)
            for what, broken in (
                (_MISSING_POD, phase == "Bound" and bool(pod) and world.pod(pod) is None),
                (_LOST_WITH_POD, phase == "Lost" and bool(pod)),
            ):
                if broken:
                    self.deadlines.open(
                        (claim, what),
                        start=entry.t,
                        within=self.options.grace,
                        detail=(claim, what),
                    )
                else:
                    self.deadlines.close((claim, what))

    def overdue(self, late: Obligation, seq: int) -> Verdict:
        claim, what = late.detail
        pod = spec_pod(self.facts.world.claim(claim) or {})
        return self.invariant.failed(
            t=late.deadline,
            seq=seq,
            objects=(ref(CLAIM, claim), ref(POD, pod)),
            message=f"CNClaim {claim} {what} ({pod}) for over {self.options.grace:g}s",
        )


INVARIANT = BoundHasPod()
