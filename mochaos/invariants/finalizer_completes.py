"""finalizer-completes (B1): a deleting CNClaim is gone within ``finalize_timeout``.

The clock starts at the first change that shows the claim's deletionTimestamp;
a DELETED event stops it. A stuck Finalize (B1) keeps the claim past the deadline.
"""

from __future__ import annotations

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import deleting
from mochaos.invariants.base import DeadlineJudge, InvariantBase, Obligation
from mochaos.invariants.facts import CLAIM, POD, Facts, Obj, finalizers, ref
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import Change, Entry


class FinalizerCompletes(InvariantBase):
    """A CNClaim with deletionTimestamp must be gone within finalize_timeout."""

    id = "finalizer-completes"
    bugs = ("B1",)
    rank = 1

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the first deletion still unfinished when its deadline passed."""
        return _Judge(self, options, facts)


class _Judge(DeadlineJudge):
    seen = "claim deletion(s) seen"

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if not isinstance(entry, Change) or entry.kind != CLAIM:
            return
        if entry.event == "DELETED":
            self.deadlines.close(entry.name)
        elif deleting(entry.obj):
            self.deadlines.open(entry.name, start=entry.t, within=self.options.finalize_timeout)

    def overdue(self, late: Obligation, seq: int) -> Verdict:
        name = str(late.key)
        world = self.facts.world
        claim = world.claim(name) or {}
        pods = world.pods_labelled(name)
        held = ", ".join(pods) or "none"
        return self.invariant.failed(
            t=late.deadline,
            seq=seq,
            objects=(ref(CLAIM, name), *(ref(POD, p) for p in pods)),
            message=(
                f"CNClaim {name} still exists {self.options.finalize_timeout:g}s after its "
                f"deletion started (finalizers: {', '.join(finalizers(claim)) or 'none'}; "
                f"pods claimed-by={name}: {held})"
            ),
        )

    def in_flight(self, now: float) -> list[str]:
        """Claims being deleted whose finalize deadline has not passed at ``now``."""
        return [f"deleting {o.key}" for o in self.deadlines.in_time(now)]


INVARIANT = FinalizerCompletes()
