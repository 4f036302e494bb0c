"""Run by the safety tests as a child pytest: the seed scenario, ``RUNS`` times (one test
per run, so that xdist spreads them). Not collected by ``pytest tests/``."""

from __future__ import annotations

import pytest

from mochaos.scenario.engine import Scenario
from mochaos.scenario.recipes import build_seed, scale_in_during_migration

pytestmark = pytest.mark.scenario

RUNS = 10


@pytest.mark.parametrize("run", range(RUNS))
def test_seed(scenario: Scenario, run: int):
    scale_in_during_migration(scenario, build_seed(scenario))
