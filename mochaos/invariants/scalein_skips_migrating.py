"""scalein-skips-migrating (B2, B6): scale-in does not delete a migrating claim.

A claim deleted by the operator (not by our delete_claim or namespace deletion)
while its spec.sourcePod was set is a violation when another live claim of the
same claim set, not migrating, existed then and was still live a short window
later (``max(5 * time_scale, 1)`` s). The window spares the epilogue, where a
scale to 0 deletes every claim of the set together.
"""

from __future__ import annotations

from dataclasses import dataclass

from mochaos.invariants.base import InvariantBase
from mochaos.invariants.facts import (
    CLAIM,
    POD,
    World,
    claim_set,
    own_write_rvs,
    ref,
    source_pod,
    spec_pod,
)
from mochaos.types import ActionRecord, Change, CheckOptions, History, Verdict, obj_deleting


@dataclass(slots=True)
class _Deletion:
    """A migrating claim the operator deleted, and the siblings that were spared so far."""

    change: Change
    claim_set: str
    spared: set[str]


class ScaleInSkipsMigrating(InvariantBase):
    """Scale-in never picks a claim with spec.sourcePod while a non-migrating one exists."""

    id = "scalein-skips-migrating"
    bugs = ("B2", "B6")

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Fail at the first operator deletion of a migrating claim with a spared sibling.

        The sibling must still be live after the window; when the history ends
        inside the window, ``final`` judges at the end and continuous evaluation waits.
        """
        window = max(options.scaled(5.0), 1.0)
        ours = own_write_rvs(history)
        deleted_by_us = {a.name for a in history.actions("delete_claim")}
        namespace_deletes = list(history.actions("delete_namespace"))
        world = World()
        pending: list[_Deletion] = []
        for entry in history:
            while pending and entry.t > pending[0].change.t + window:
                verdict = self._judge(pending.pop(0))
                if verdict is not None:
                    return verdict
            if not isinstance(entry, Change) or entry.kind not in (POD, CLAIM):
                continue
            before = world.apply(entry)
            if entry.kind != CLAIM:
                continue
            if world.live_claim(entry.name) is None:
                for deletion in pending:
                    deletion.spared.discard(entry.name)
            deleting = entry.event == "DELETED" or obj_deleting(entry.obj)
            if not deleting or (before is not None and obj_deleting(before)):
                continue
            if not source_pod(entry.obj) or entry.rv in ours or entry.name in deleted_by_us:
                continue
            if any(_caused(entry, action) for action in namespace_deletes):
                continue
            spared = _siblings(world, entry.name, claim_set(entry.obj))
            if spared:
                pending.append(_Deletion(entry, claim_set(entry.obj), spared))
        if final:
            for deletion in pending:
                verdict = self._judge(deletion)
                if verdict is not None:
                    return verdict
        return self.passed("no operator deletion of a migrating claim with a non-migrating sibling")

    def _judge(self, deletion: _Deletion) -> Verdict | None:
        if not deletion.spared:
            return None
        change = deletion.change
        source, target = source_pod(change.obj), spec_pod(change.obj)
        spared = sorted(deletion.spared)
        return self.failed(
            t=change.t,
            seq=change.seq,
            objects=(
                ref(CLAIM, change.name),
                ref(POD, source),
                *([ref(POD, target)] if target else []),
                *(ref(CLAIM, s) for s in spared),
            ),
            message=(
                f"CNClaim {change.name} deleted by the operator while migrating "
                f"({source} -> {target or '?'}); non-migrating CNClaim {', '.join(spared)} "
                f"of claim set {deletion.claim_set} was kept"
            ),
        )


def _caused(change: Change, action: ActionRecord) -> bool:
    """Whether ``action`` may have caused ``change`` (by resourceVersion, else by time)."""
    if action.write_rv is not None:
        return action.write_rv <= change.rv
    return action.t <= change.t


def _siblings(world: World, claim: str, group: str) -> set[str]:
    """Live claims of claim set ``group`` other than ``claim`` that are not migrating."""
    if not group:
        return set()
    return {
        name
        for name, obj in world.state.all(CLAIM).items()
        if name != claim
        and claim_set(obj) == group
        and world.live_claim(name) is not None
        and not source_pod(obj)
    }


INVARIANT = ScaleInSkipsMigrating()
