"""finalizer-completes (B1): a deleting CNClaim is gone within ``finalize_timeout``.

The clock starts at the first change that shows the claim's deletionTimestamp;
a DELETED event stops it. A stuck Finalize (B1) keeps the claim past the deadline.
"""

from __future__ import annotations

from mochaos.invariants.base import Deadlines, InvariantBase
from mochaos.invariants.facts import CLAIM, POD, World, finalizers, ref
from mochaos.types import Change, CheckOptions, History, Verdict, obj_deleting


class FinalizerCompletes(InvariantBase):
    """A CNClaim with deletionTimestamp must be gone within finalize_timeout."""

    id = "finalizer-completes"
    bugs = ("B1",)

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Fail at the first deletion still unfinished when its deadline passed."""
        world = World()
        deadlines = Deadlines()
        for entry in history:
            late = deadlines.expired(entry.t)
            if late is not None:
                name = str(late.key)
                claim = world.claim(name) or {}
                pods = world.pods_labelled(name)
                held = ", ".join(pods) or "none"
                return self.failed(
                    t=late.deadline,
                    seq=entry.seq,
                    objects=(ref(CLAIM, name), *(ref(POD, p) for p in pods)),
                    message=(
                        f"CNClaim {name} still exists {options.finalize_timeout:g}s after its "
                        f"deletion started (finalizers: {', '.join(finalizers(claim)) or 'none'}; "
                        f"pods claimed-by={name}: {held})"
                    ),
                )
            if isinstance(entry, Change):
                world.apply(entry)
                if entry.kind != CLAIM:
                    continue
                if entry.event == "DELETED":
                    deadlines.close(entry.name)
                elif obj_deleting(entry.obj):
                    deadlines.open(
                        entry.name, start=entry.t, within=options.finalize_timeout, seq=entry.seq
                    )
        return self.passed(deadlines.summary("claim deletion(s) seen"))


INVARIANT = FinalizerCompletes()
