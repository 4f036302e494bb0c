"""Run by the safety tests as a child pytest: the seed scenario, ``RUNS`` times (one test
per run, so that xdist spreads them). Not collected by ``pytest tests/``."""

from __future__ import annotations

import pytest

from mochaos.scenario.engine import Scenario
from mochaos.scenario.predicates import source_draining
from mochaos.scenario.recipes import build_seed

pytestmark = pytest.mark.scenario

RUNS = 10


@pytest.mark.parametrize("run", range(RUNS))
def test_seed(scenario: Scenario, run: int):
    sc = scenario
    seed = build_seed(sc)
    sc.agent.request_migration(seed.x, target=seed.b)
    draining = sc.when(source_draining(seed.x, seed.a), timeout=sc.waits.migration_phase)
    sc.scale_claimset("s1", replicas=1, trigger=draining)
    sc.settle()
    sc.epilogue()
    sc.verdict()
