"""Run by the safety tests as a child pytest: a scenario whose topology never gets ready,
the Inconclusive a suite's fixture raises while the test is set up (a wait for a state that
timed out), after the scenario fixture exists.

Not collected by ``pytest tests/`` (its name does not start with ``test_``).
"""

from __future__ import annotations

import pytest

from mochaos.errors import Inconclusive
from mochaos.scenario import Scenario

pytestmark = pytest.mark.scenario

REASON = "not ready after 1s: a planted topology that never gets ready"


@pytest.fixture
def never_ready(scenario: Scenario) -> None:
    raise Inconclusive(REASON)


def test_topology_never_ready(never_ready: None) -> None:
    raise AssertionError("not reached: the set-up is inconclusive")
