"""The production race of the bug report: CNClaimSet scale-in while a claim migrates.

docs/operator-behaviour.md §11.1 / §11.3. Claim X migrates onto pod B, which
claim Z of another set already holds (the platform agent's stale view); when
X's source pod is Draining, X's set is scaled in. A correct operator skips the
migrating claim, lets the migration finish, and every pod goes back to the
pool when the sets are scaled to 0.
"""

from __future__ import annotations

import pytest

from mochaos.scenario import (
    MIGRATION,
    MIGRATION_PHASES,
    MIGRATION_RACE,
    PHASE_LABEL,
    Scenario,
    SeedTopology,
    claim_deleting_in,
    hold_write,
    scale_claimset,
    source_draining,
)

pytestmark = pytest.mark.scenario


def test_scalein_during_migration(scenario: Scenario, seed: SeedTopology):
    """The seed scenario, as in the bug report's own reproduction."""
    sc = scenario
    MIGRATION.drive(sc, seed)
    draining = sc.when(source_draining(seed.x, seed.a), timeout=sc.waits.migration_phase)
    sc.inject(scale_claimset("s1", replicas=1), trigger=draining)


@pytest.mark.interposer
def test_scalein_during_migration_held(scenario: Scenario, seed: SeedTopology):
    """The seed race made certain: the operator's write that ends the drain of X's source A
    (its pool phase Draining → Idle: the store controller's, cnstore/pooling.go) is held
    until S1's scale-in has landed and the claim-set controller has picked its victim, so
    the scale-in always lands while X migrates (docs/interleaving.md)."""
    sc = scenario
    drained = sc.inject(hold_write(seed.a, kind="Pod", labels={PHASE_LABEL: "Idle"}))
    MIGRATION.drive(sc, seed)
    draining = sc.when(source_draining(seed.x, seed.a), timeout=sc.waits.migration_phase)
    sc.inject(scale_claimset("s1", replicas=1), trigger=draining)
    sc.when(claim_deleting_in("s1"), timeout=sc.waits.log_line)
    sc.when_taken(drained, timeout=sc.waits.migration_phase)
    sc.release(drained)


def test_scalein_during_migration_race(scenario: Scenario):
    """The double reference from a real race: the agent picks an Idle pod, S2 binds it first."""
    sc = scenario
    race = MIGRATION_RACE.setup(sc)
    MIGRATION_RACE.drive(sc, race)
    draining = sc.when(source_draining(race.x, race.a), timeout=sc.waits.migration_phase)
    sc.inject(scale_claimset("s1", replicas=1), trigger=draining)


@pytest.mark.parametrize("phase", list(MIGRATION_PHASES))
def test_scalein_during_migration_sweep(scenario: Scenario, seed: SeedTopology, phase: str):
    """The seed scenario with the scale-in injected at each phase of the migration."""
    sc = scenario
    MIGRATION.drive(sc, seed)
    reached = sc.when(
        MIGRATION_PHASES[phase](seed.x, seed.a, seed.b), timeout=sc.waits.migration_phase
    )
    sc.inject(scale_claimset("s1", replicas=1), trigger=reached)
