"""Fixtures shared by the suites."""

from __future__ import annotations

import pytest

from mochaos.scenario import MIGRATION, Scenario, SeedTopology


@pytest.fixture
def seed(scenario: Scenario) -> SeedTopology:
    """The seed race's topology (the ``migration`` workload's), built in the test's namespace."""
    return MIGRATION.setup(scenario)
