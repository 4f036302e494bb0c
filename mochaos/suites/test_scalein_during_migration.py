"""The production race of the bug report: CNClaimSet scale-in while a claim migrates.

docs/operator-behaviour.md §11.1 / §11.3. Claim X migrates onto pod B, which
claim Z of another set already holds (the platform agent's stale view); when
X's source pod is Draining, X's set is scaled in. A correct operator skips the
migrating claim, lets the migration finish, and every pod goes back to the
pool when the sets are scaled to 0.
"""

from __future__ import annotations

import pytest

from mochaos.scenario.engine import Scenario
from mochaos.scenario.predicates import MIGRATION_PHASES, source_draining
from mochaos.scenario.recipes import SeedTopology, build_s1, held_by_set

pytestmark = pytest.mark.scenario


def test_scalein_during_migration(scenario: Scenario, seed: SeedTopology):
    """The seed scenario, as in the bug report's own reproduction."""
    sc = scenario
    sc.agent.request_migration(seed.x, target=seed.b)
    draining = sc.when(source_draining(seed.x, seed.a), timeout=sc.waits.migration_phase)
    sc.scale_claimset("s1", replicas=1, trigger=draining)
    sc.settle()
    sc.epilogue()
    sc.verdict()


def test_scalein_during_migration_race(scenario: Scenario):
    """The double reference from a real race: the agent picks an Idle pod, S2 binds it first."""
    sc = scenario
    x, _ = build_s1(sc, max_idle=1)
    a = sc.pod_of(x)
    sc.idle_pods("pool", at_least=1)
    target = sc.agent.pick_target(x)
    sc.claimset("s2", replicas=1)
    held = sc.when(held_by_set(target, "s2"), timeout=sc.waits.migration_phase)
    sc.agent.request_migration(x, target=target, trigger=held)
    draining = sc.when(source_draining(x, a), timeout=sc.waits.migration_phase)
    sc.scale_claimset("s1", replicas=1, trigger=draining)
    sc.settle()
    sc.epilogue()
    sc.verdict()


@pytest.mark.parametrize("phase", list(MIGRATION_PHASES))
def test_scalein_during_migration_sweep(scenario: Scenario, seed: SeedTopology, phase: str):
    """The seed scenario with the scale-in injected at each phase of the migration."""
    sc = scenario
    sc.agent.request_migration(seed.x, target=seed.b)
    reached = sc.when(
        MIGRATION_PHASES[phase](seed.x, seed.a, seed.b), timeout=sc.waits.migration_phase
    )
    sc.scale_claimset("s1", replicas=1, trigger=reached)
    sc.settle()
    sc.epilogue()
    sc.verdict()
