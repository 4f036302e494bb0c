"""A migration's target pod is deleted once it is bound: the claim names a pod that is gone.

The agent migrates standalone claim X onto an Idle pod; as soon as that pod is Bound for
X, it is deleted. A correct operator gives up the migration and binds X again; the agent,
whose target is gone, stops asking. docs/bugs.md#pr592-target-lost.
"""

from __future__ import annotations

import pytest

from mochaos.scenario import Scenario, delete_pod, target_bound

pytestmark = pytest.mark.scenario


def test_delete_target_pod_during_migration(scenario: Scenario):
    """Delete the migration's target pod the moment it is Bound for the claim."""
    sc = scenario
    sc.topology.pool("pool", max_idle=2)  # a CNPool; waits until 2 pods are Idle
    x = sc.topology.claim("x")  # a standalone CNClaim; waits until it is Bound
    migration = sc.agent.request_migration(x)  # an Idle target, picked with the run's seed
    bound = sc.when(target_bound(x, migration.target), timeout=sc.waits.migration_phase)
    sc.inject(delete_pod(migration.target), trigger=bound)  # must land while it is Bound
    migration.stop.set()  # the agent sees its target gone and stops re-sending the patch
    # The fixture ends the scenario: settle, epilogue (every pod back to the pool), verdict.
