"""Fixtures shared by the suites."""

from __future__ import annotations

import pytest

from mochaos.scenario.engine import Scenario
from mochaos.scenario.recipes import SeedTopology, build_seed


@pytest.fixture
def seed(scenario: Scenario) -> SeedTopology:
    """The seed race's topology, built in the test's namespace."""
    return build_seed(scenario)
