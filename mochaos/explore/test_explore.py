"""The pytest entry of an exploration: one test per case of an exploration file.

``pytest --pyargs mochaos.explore --mochaos-explore=exploration.json`` runs every case
the file lists (``test_explore[learn]``, ``test_explore[p03-scale-in.migrating-set]``, …),
each a scenario in its own namespace with its own operator; ``python -m mochaos explore``
writes such files and drives these runs.
"""

from __future__ import annotations

import pytest

from mochaos.config import run_config
from mochaos.explore.case import run_case
from mochaos.explore.plan import batch_runs, load
from mochaos.scenario import Scenario

pytestmark = pytest.mark.scenario


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One parameter per case of the ``--mochaos-explore`` file."""
    if "explore_case" not in metafunc.fixturenames:
        return
    path = run_config(metafunc.config).explore
    if path is None:
        skip = pytest.mark.skip(reason="no exploration: give --mochaos-explore=<exploration.json>")
        metafunc.parametrize("explore_case", [pytest.param(None, marks=skip)], ids=["none"])
        return
    exploration = load(path)
    runs = batch_runs(exploration)
    metafunc.parametrize(
        "explore_case", [(exploration, case) for _, case in runs], ids=[i for i, _ in runs]
    )


def test_explore(scenario: Scenario, explore_case) -> None:
    """One case: the workload, its faults at their points, every invariant."""
    exploration, case = explore_case
    run_case(scenario, exploration, case)
