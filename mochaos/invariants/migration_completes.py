"""migration-completes (stalls): a migration ends within ``migration_timeout``.

A migration starts when a claim's spec.sourcePod becomes set. It ends when
sourcePod is cleared and status.store.string equals spec.podName (the store
moved to the target), or when the claim is gone (DELETED seen).
"""

from __future__ import annotations

from mochaos.config import CheckOptions
from mochaos.invariants.base import DeadlineJudge, InvariantBase, Obligation
from mochaos.invariants.facts import CLAIM, POD, Facts, Obj, ref, source_pod, spec_pod, store_pod
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import Change, Entry


class MigrationCompletes(InvariantBase):
    """Every migration finishes, or its claim is deleted, within migration_timeout."""

    id = "migration-completes"
    bugs = ()
    rank = 6

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the first migration still unfinished when its deadline passed."""
        return _Judge(self, options, facts)


class _Judge(DeadlineJudge):
    seen = "migration(s) seen"

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if not isinstance(entry, Change) or entry.kind != CLAIM:
            return
        if entry.event == "DELETED":
            self.deadlines.close(entry.name)
        elif source_pod(entry.obj):
            self.deadlines.open(
                entry.name,
                start=entry.t,
                within=self.options.migration_timeout,
                detail=(source_pod(entry.obj), spec_pod(entry.obj)),
            )
        elif store_pod(entry.obj) == spec_pod(entry.obj):
            self.deadlines.close(entry.name)

    def overdue(self, late: Obligation, seq: int) -> Verdict:
        name = str(late.key)
        claim = self.facts.world.claim(name) or {}
        source, target = late.detail
        return self.invariant.failed(
            t=late.deadline,
            seq=seq,
            objects=(ref(CLAIM, name), ref(POD, source), ref(POD, target)),
            message=(
                f"migration of CNClaim {name} from {source} to {target} not finished "
                f"{self.options.migration_timeout:g}s after it started (sourcePod="
                f"{source_pod(claim) or 'cleared'}, podName={spec_pod(claim) or '-'}, "
                f"store.string={store_pod(claim) or '-'})"
            ),
        )

    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        """As every deadline judge, but skipped when no migration happened."""
        verdict = super().verdict(now=now, final=final)
        if not verdict.failed and not self.deadlines.opened:
            return self.invariant.skipped("no migration happened")
        return verdict

    def in_flight(self, now: float) -> list[str]:
        """Live claims still migrating (spec.sourcePod set) whose deadline has not passed."""
        world = self.facts.world
        return [
            f"migrating {o.key}"
            for o in self.deadlines.in_time(now)
            if source_pod(world.live_claim(str(o.key)) or {})
        ]


INVARIANT = MigrationCompletes()
