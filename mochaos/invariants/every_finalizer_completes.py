"""every-finalizer-completes (stuck objects): each finalizer of the operator's is removed in time.

For every object mo-chaos records (pods, claim sets, pools), each ``matrixorigin.io/``
finalizer on it must be gone — removed, or the object deleted — within its deadline in the
catalogue (mochaos/ctrl/finalizers.py: who removes it, and how long it may take) plus
``grace``, counted from when its removal became due: the object's deletionTimestamp, or for
the ``cn-draining`` pre-delete hook OpenKruise's ``PreparingDelete``. A pod that never finishes
terminating is as stuck as a claim. The claim's own finalizer is finalizer-completes' (B1).
"""

from __future__ import annotations

from mochaos.config import CheckOptions
from mochaos.ctrl.finalizers import PREPARING_DELETE, lookup
from mochaos.ctrl.objects import CLAIM_FINALIZER, KRUISE_STATE_LABEL, deleting, labels_of
from mochaos.invariants.base import DeadlineJudge, InvariantBase, Obligation
from mochaos.invariants.facts import CLAIM, Facts, Obj, finalizers, ref
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import Change, Entry

JUDGED_ELSEWHERE = frozenset({(CLAIM, CLAIM_FINALIZER)})
"""(kind, finalizer) pairs another invariant judges: finalizer-completes, the claim's."""


class EveryFinalizerCompletes(InvariantBase):
    """Each of the operator's finalizers leaves its object within the catalogue's deadline."""

    id = "every-finalizer-completes"
    bugs = ()
    rank = 13

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the first finalizer still on its object when its deadline passed."""
        return _Judge(self, options, facts)


class _Judge(DeadlineJudge):
    seen = "finalizer removal(s) due"

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if not isinstance(entry, Change):
            return
        obj_key = (entry.kind, entry.name)
        held = set() if entry.event == "DELETED" else set(finalizers(entry.obj))
        had = set(finalizers(prev)) if prev is not None else set()
        for name in had - held:  # removed (or the object gone): its obligation, if any, met
            self.deadlines.close((*obj_key, name))
        why = _due(entry.obj)
        if why is None:
            return
        for name in sorted(held):
            known = lookup(name)
            if known is None or (entry.kind, name) in JUDGED_ELSEWHERE:
                continue
            if why == PREPARING_DELETE and not known.due_at_preparing_delete:
                continue
            within = self.options.scaled(known.within) + self.options.grace
            self.deadlines.open((*obj_key, name), start=entry.t, within=within,
                                detail=(why, known))  # fmt: skip

    def overdue(self, late: Obligation, seq: int) -> Verdict:
        kind, name, finalizer = late.key
        why, entry = late.detail
        return self.invariant.failed(
            t=late.deadline,
            seq=seq,
            objects=(ref(kind, name),),
            message=(
                f"{kind} {name} still holds finalizer {finalizer} "
                f"{late.deadline - late.start:g}s after {_WHY[why]} (removed by "
                f"{entry.removed_by})"
            ),
        )

    def in_flight(self, now: float) -> list[str]:
        """Finalizers whose removal is due and whose deadline has not passed at ``now``."""
        return [f"{o.key[0]} {o.key[1]}: {o.key[2]}" for o in self.deadlines.in_time(now)]


_WHY = {
    "deletionTimestamp": "its deletion started",
    PREPARING_DELETE: "OpenKruise held it in PreparingDelete",
}


def _due(obj: Obj) -> str | None:
    """What makes the object's finalizers due: its deletion, or (a pod) kruise's hold."""
    if deleting(obj):
        return "deletionTimestamp"
    if labels_of(obj).get(KRUISE_STATE_LABEL) == PREPARING_DELETE:
        return PREPARING_DELETE
    return None


INVARIANT = EveryFinalizerCompletes()
