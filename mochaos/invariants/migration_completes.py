"""migration-completes (stalls): a migration ends within ``migration_timeout``.

A migration starts when a claim's spec.sourcePod becomes set. It ends when
sourcePod is cleared and status.store.string equals spec.podName (the store
moved to the target), or when the claim is gone (DELETED seen).
"""

from __future__ import annotations

from mochaos.invariants.base import Deadlines, InvariantBase
from mochaos.invariants.facts import CLAIM, POD, World, ref, source_pod, spec_pod, store_pod
from mochaos.types import Change, CheckOptions, History, Verdict


class MigrationCompletes(InvariantBase):
    """Every migration finishes, or its claim is deleted, within migration_timeout."""

    id = "migration-completes"
    bugs = ()

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Fail at the first migration still unfinished when its deadline passed."""
        world = World()
        migrations = Deadlines()
        for entry in history:
            late = migrations.expired(entry.t)
            if late is not None:
                name = str(late.key)
                claim = world.claim(name) or {}
                source, target = late.detail
                return self.failed(
                    t=late.deadline,
                    seq=entry.seq,
                    objects=(ref(CLAIM, name), ref(POD, source), ref(POD, target)),
                    message=(
                        f"migration of CNClaim {name} from {source} to {target} not finished "
                        f"{options.migration_timeout:g}s after it started (sourcePod="
                        f"{source_pod(claim) or 'cleared'}, podName={spec_pod(claim) or '-'}, "
                        f"store.string={store_pod(claim) or '-'})"
                    ),
                )
            if not isinstance(entry, Change) or entry.kind != CLAIM:
                continue
            world.apply(entry)
            if entry.event == "DELETED":
                migrations.close(entry.name)
            elif source_pod(entry.obj):
                migrations.open(
                    entry.name,
                    start=entry.t,
                    within=options.migration_timeout,
                    seq=entry.seq,
                    detail=(source_pod(entry.obj), spec_pod(entry.obj)),
                )
            elif store_pod(entry.obj) == spec_pod(entry.obj):
                migrations.close(entry.name)
        if not migrations.opened:
            return self.skipped("no migration happened")
        return self.passed(migrations.summary("migration(s) seen"))


INVARIANT = MigrationCompletes()
