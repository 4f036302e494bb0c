"""replicas-converge (scale bugs): a CNClaimSet's status reaches its spec within a timeout.

After the claim set's creation and after each change of spec.replicas, both
status.replicas and status.readyReplicas must equal spec.replicas at some point
within ``converge_timeout``. A change made while the set has not converged yet
keeps the earlier start. Claim sets being deleted are not judged.
"""

from __future__ import annotations

from mochaos.invariants.base import Deadlines, InvariantBase
from mochaos.invariants.facts import CLAIMSET, Obj, ref
from mochaos.types import Change, CheckOptions, History, Verdict, obj_deleting


class ReplicasConverge(InvariantBase):
    """CNClaimSet status.replicas and readyReplicas reach spec.replicas in time."""

    id = "replicas-converge"
    bugs = ()

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Fail at the first claim set that did not converge by its deadline."""
        latest: dict[str, Obj] = {}
        scales = Deadlines()
        for entry in history:
            late = scales.expired(entry.t)
            if late is not None:
                name = str(late.key)
                desired, replicas, ready = _counts(latest[name])
                return self.failed(
                    t=late.deadline,
                    seq=entry.seq,
                    objects=(ref(CLAIMSET, name),),
                    message=(
                        f"CNClaimSet {name} did not converge within "
                        f"{options.converge_timeout:g}s: spec.replicas={desired}, "
                        f"status.replicas={replicas}, readyReplicas={ready}"
                    ),
                )
            if not isinstance(entry, Change) or entry.kind != CLAIMSET:
                continue
            name, obj = entry.name, entry.obj
            before = latest.get(name)
            if entry.event == "DELETED" or obj_deleting(obj):
                latest.pop(name, None)
                scales.close(name)
                continue
            latest[name] = obj
            desired, replicas, ready = _counts(obj)
            if before is None or _counts(before)[0] != desired:
                scales.open(name, start=entry.t, within=options.converge_timeout, seq=entry.seq)
            if replicas == desired and ready == desired:
                scales.close(name)
        return self.passed(scales.summary("scale change(s) seen"))


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
