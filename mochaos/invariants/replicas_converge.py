"""replicas-converge (scale bugs): a CNClaimSet's status reaches its spec within a timeout.

After the claim set's creation and after each change of spec.replicas, both
status.replicas and status.readyReplicas must equal spec.replicas at some point
within ``converge_timeout``. A change made while the set has not converged yet
keeps the earlier start. Claim sets being deleted are not judged.
"""

from __future__ import annotations

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import deleting
from mochaos.invariants.base import DeadlineJudge, InvariantBase, Obligation
from mochaos.invariants.facts import CLAIMSET, Facts, Obj, ref
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import Change, Entry


class ReplicasConverge(InvariantBase):
    """CNClaimSet status.replicas and readyReplicas reach spec.replicas in time."""

    id = "replicas-converge"
    bugs = ()
    rank = 7

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the first claim set that did not converge by its deadline."""
        return _Judge(self, options, facts)


class _Judge(DeadlineJudge):
    seen = "scale change(s) seen"

    def __init__(self, invariant: InvariantBase, options: CheckOptions, facts: Facts) -> None:
        super().__init__(invariant, options, facts)
        self.latest: dict[str, Obj] = {}

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if not isinstance(entry, Change) or entry.kind != CLAIMSET:
            return
        name, obj = entry.name, entry.obj
        before = self.latest.get(name)
        if entry.event == "DELETED" or deleting(obj):
            self.latest.pop(name, None)
            self.deadlines.close(name)
            return
        self.latest[name] = obj
        desired, replicas, ready = _counts(obj)
        if before is None or _counts(before)[0] != desired:
            self.deadlines.open(name, start=entry.t, within=self.options.converge_timeout)
        if replicas == desired and ready == desired:
            self.deadlines.close(name)

    def overdue(self, late: Obligation, seq: int) -> Verdict:
        name = str(late.key)
        desired, replicas, ready = _counts(self.latest[name])
        return self.invariant.failed(
            t=late.deadline,
            seq=seq,
            objects=(ref(CLAIMSET, name),),
            message=(
                f"CNClaimSet {name} did not converge within "
                f"{self.options.converge_timeout:g}s: spec.replicas={desired}, "
                f"status.replicas={replicas}, readyReplicas={ready}"
            ),
        )


def _counts(claimset: Obj) -> tuple[int, int, int]:
    """spec.replicas, status.replicas, status.readyReplicas (absent counts as 0)."""
    spec = claimset.get("spec") or {}
    status = claimset.get("status") or {}
    return (
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
    )


INVARIANT = ReplicasConverge()
