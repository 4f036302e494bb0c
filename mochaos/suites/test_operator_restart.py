"""The operator restarts while a claim finalizes after a scale-in during migration.

A restart lists every object afresh (docs/bugs.md#b1: what
ends the loop): the framework must keep its history across it and give the
same kind of verdict, and a correct operator must finish what it started.
"""

from __future__ import annotations

import pytest

from mochaos.scenario import (
    FINALIZE_ATTEMPT,
    MIGRATION,
    Scenario,
    SeedTopology,
    restart_operator,
    scale_claimset,
    source_draining,
)

pytestmark = pytest.mark.scenario


def test_operator_restart_during_finalize(scenario: Scenario, seed: SeedTopology):
    """Scale in during the drain, then restart the operator at its first finalize."""
    sc = scenario
    MIGRATION.drive(sc, seed)
    draining = sc.when(source_draining(seed.x, seed.a), timeout=sc.waits.migration_phase)
    sc.inject(scale_claimset("s1", replicas=1), trigger=draining)
    finalizing = sc.when_logged(FINALIZE_ATTEMPT, timeout=sc.waits.log_line)
    sc.inject(restart_operator(), trigger=finalizing)
