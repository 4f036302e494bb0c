"""Run by the safety tests as a child pytest: the seed scenario, ``RUNS`` times (one test
per run, so that xdist spreads them). Not collected by ``pytest tests/``."""

from __future__ import annotations

import pytest

from mochaos.scenario import MIGRATION, Scenario, scale_claimset, source_draining

pytestmark = pytest.mark.scenario

RUNS = 10


@pytest.mark.parametrize("run", range(RUNS))
def test_seed(scenario: Scenario, run: int):
    sc = scenario
    seed = MIGRATION.setup(sc)
    MIGRATION.drive(sc, seed)
    draining = sc.when(source_draining(seed.x, seed.a), timeout=sc.waits.migration_phase)
    sc.inject(scale_claimset("s1", replicas=1), trigger=draining)
