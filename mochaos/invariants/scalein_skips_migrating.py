"""scalein-skips-migrating (B2, B6): scale-in does not delete a migrating claim.

A claim deleted by the operator (not by our delete_claim or namespace deletion)
while its spec.sourcePod was set is a violation when another live claim of the
same claim set, not migrating, existed then and survived the scale-in pass.

Confirmed at once when our scale of that set was recorded before the deletion
(an intent record, written before the write) and every target the operator can
have been working towards keeps at least as many claims as the set has migrating
ones: a scale-in that skips migrating claims then never needs to delete one.
Otherwise the sibling must still be live a short window later
(``max(5 * time_scale, 1)`` s); the window spares the epilogue, where a scale to
0 deletes every claim of the set together.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import deleting
from mochaos.invariants.base import InvariantBase, Judge
from mochaos.invariants.facts import (
    CLAIM,
    CLAIMSET,
    POD,
    Facts,
    Obj,
    World,
    claim_set,
    ref,
    source_pod,
    spec_pod,
)
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import ActionRecord, Change, Entry


class ScaleInSkipsMigrating(InvariantBase):
    """Scale-in never picks a claim with spec.sourcePod while a non-migrating one exists."""

    id = "scalein-skips-migrating"
    bugs = ("B2", "B6")
    rank = 5

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the first operator deletion of a migrating claim with a spared sibling.

        When the history ends inside a deletion's window, ``final`` judges at the
        end and continuous evaluation waits.
        """
        return _Judge(self, options, facts)


@dataclass(slots=True, eq=False)
class _Deletion:
    """A migrating claim the operator deleted, and the siblings that were spared so far."""

    change: Change
    claim_set: str
    spared: set[str]
    judged: bool = False
    """Its window closed, or it was confirmed at once: ``spared`` no longer changes."""
    cleared: bool = False
    """It turned out to be our own deletion."""
    at_once: tuple[int, int] | None = None
    """When confirmed at once: the lowest scale target the operator could work towards,
    and how many migrating claims the set had."""


class _Judge(Judge):
    def __init__(self, invariant: InvariantBase, options: CheckOptions, facts: Facts) -> None:
        super().__init__(invariant, options, facts)
        self.window = max(options.scaled(5.0), 1.0)
        self.pending: deque[_Deletion] = deque()
        self.failures: list[tuple[int, _Deletion]] = []
        """Heap of failed deletions by seq (cleared ones are dropped when on top)."""
        self.sparing: dict[str, list[_Deletion]] = {}
        self.by_rv: dict[int, list[_Deletion]] = {}
        self.by_name: dict[str, list[_Deletion]] = {}
        self.every: list[_Deletion] = []
        self.deleted_by_us: set[str] = set()
        self.namespace_deletes: list[ActionRecord] = []
        self.targets: dict[str, list[int]] = {}
        """Claim set -> the replicas of each of our scale intents, in order."""
        self.ended: dict[str, set[str]] = {}
        """Claim set -> claims whose migration ended since our first scale intent of it."""

    def open(self, now: float) -> bool:
        """A scale-in deletion whose window has not closed yet."""
        return bool(self.pending)

    # -- feeding ---------------------------------------------------------------------

    def before(self, entry: Entry) -> None:
        """Judge the deletions whose window ``entry`` closes, oldest first."""
        while self.pending and entry.t > self.pending[0].change.t + self.window:
            head = self.pending.popleft()
            if not head.cleared:
                self._judge(head)

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if isinstance(entry, ActionRecord):
            self._ours(entry)
        elif isinstance(entry, Change) and entry.kind == CLAIM:
            self._claim(entry, prev)

    def amend(self, action: ActionRecord) -> None:
        """The write's resourceVersion is known now: its change was ours."""
        _clear(self.by_rv.pop(action.write_rv, ()))  # type: ignore[arg-type]

    def _claim(self, change: Change, prev: Obj | None) -> None:
        world = self.facts.world
        name = change.name
        if world.live_claim(name) is None:
            for deletion in self.sparing.pop(name, ()):
                if not deletion.judged:
                    deletion.spared.discard(name)
        elif prev is not None and source_pod(prev) and not source_pod(change.obj):
            ended = self.ended.get(claim_set(change.obj))
            if ended is not None:
                ended.add(name)
        removed = change.event == "DELETED" or deleting(change.obj)
        if not removed or (prev is not None and deleting(prev)):
            return
        if not source_pod(change.obj) or self._by_us(change):
            return
        group = claim_set(change.obj)
        spared = _siblings(world, group)
        if not spared:
            return
        deletion = _Deletion(change, group, spared)
        self.every.append(deletion)
        self.by_rv.setdefault(change.rv, []).append(deletion)
        self.by_name.setdefault(name, []).append(deletion)
        for sibling in spared:
            self.sparing.setdefault(sibling, []).append(deletion)
        deletion.at_once = self._certain(deletion)
        if deletion.at_once is not None:
            deletion.judged = True
            heapq.heappush(self.failures, (change.seq, deletion))
        else:
            self.pending.append(deletion)

    def _judge(self, deletion: _Deletion) -> None:
        deletion.judged = True
        if deletion.spared:
            heapq.heappush(self.failures, (deletion.change.seq, deletion))

    def _certain(self, deletion: _Deletion) -> tuple[int, int] | None:
        """(target, migrating) when a scale-in that skips migrating claims never deletes this one.

        A correct scale-in to R replicas deletes a migrating claim only when fewer
        than R claims are not migrating, i.e. when R < the migrating ones. Every
        target recorded for the live set counts (an intent precedes its write, so
        the write behind this deletion is among them; the operator may still work
        towards an earlier one); migrating are this claim, its live migrating
        siblings, and siblings whose migration ended since our first scale (the
        operator's cache may lag on those). None when the deletion may be correct.
        """
        group = deletion.claim_set
        targets = self.targets.get(group)
        world = self.facts.world
        claimset = world.state.get(CLAIMSET, group)
        if not targets or claimset is None or deleting(claimset):
            return None
        migrating = {deletion.change.name} | self.ended[group]
        migrating |= {n for n in world.claims_in_set(group) if _migrating(world, n)}
        target = min(targets)
        return (target, len(migrating)) if target >= len(migrating) else None

    def _by_us(self, change: Change) -> bool:
        return (
            change.rv in self.facts.own_rvs
            or change.name in self.deleted_by_us
            or any(_caused(change, action) for action in self.namespace_deletes)
        )

    def _ours(self, action: ActionRecord) -> None:
        """Clear the deletions this new action of ours caused; note a scale intent's target."""
        self.amend(action)
        if action.action == "delete_claim":
            self.deleted_by_us.add(action.name)
            _clear(self.by_name.pop(action.name, ()))
        elif action.action == "delete_namespace":
            self.namespace_deletes.append(action)
            _clear(d for d in self.every if _caused(d.change, action))
        elif action.action == "scale_claimset" and action.intent:
            replicas = action.params.get("replicas")
            if isinstance(replicas, int):
                self.targets.setdefault(action.name, []).append(replicas)
                self.ended.setdefault(action.name, set())

    # -- verdict ---------------------------------------------------------------------

    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        while self.failures and self.failures[0][1].cleared:
            heapq.heappop(self.failures)
        found = [self.failures[0][1]] if self.failures else []
        for deletion in self.pending:
            if deletion.cleared or not deletion.spared:
                continue
            if final or (now is not None and now > deletion.change.t + self.window):
                found.append(deletion)
        if not found:
            return self.invariant.passed(
                "no operator deletion of a migrating claim with a non-migrating sibling"
            )
        return self._failed(min(found, key=lambda d: d.change.seq))

    def _failed(self, deletion: _Deletion) -> Verdict:
        change = deletion.change
        source, target = source_pod(change.obj), spec_pod(change.obj)
        spared = sorted(deletion.spared)
        how = ""
        if deletion.at_once is not None:
            target_replicas, migrating = deletion.at_once
            how = (
                f"; confirmed at once: scale target {target_replicas} keeps all "
                f"{migrating} migrating claim(s)"
            )
        return self.invariant.failed(
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
                f"of claim set {deletion.claim_set} was kept{how}"
            ),
        )


def _caused(change: Change, action: ActionRecord) -> bool:
    """Whether ``action`` may have caused ``change`` (by resourceVersion, else by time)."""
    if action.write_rv is not None:
        return action.write_rv <= change.rv
    return action.t <= change.t


def _clear(deletions: Iterable[_Deletion]) -> None:
    """Mark deletions as ours."""
    for deletion in deletions:
        deletion.cleared = True


def _siblings(world: World, group: str) -> set[str]:
    """Live claims of claim set ``group`` that are not migrating (the deleted one is not live)."""
    if not group:
        return set()
    return {
        name
        for name in world.claims_in_set(group)
        if world.live_claim(name) is not None and not _migrating(world, name)
    }


def _migrating(world: World, claim: str) -> bool:
    """Whether ``claim`` is live with spec.sourcePod set."""
    return bool(source_pod(world.live_claim(claim) or {}))


INVARIANT = ScaleInSkipsMigrating()
