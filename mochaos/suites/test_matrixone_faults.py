"""MatrixOne's own failures, which the operator must ride out: HAKeeper unreachable.

Keeping MatrixOne's clients working through MatrixOne's failures is the operator's job. These
scenarios make HAKeeper — the log service, as the operator reaches it — unreachable to the
operator for a while (``hakeeper_down``: refused, as a log service that is gone, or hanging
— each call fails on the operator's own timeout — as one that is frozen), bring it back, and
let the invariants judge: a migration still completes, a claim still binds, every pod goes
back to the pool. The operator's deadlines keep running through the fault: unlike an outage of the
environment (the MatrixOne double itself down, which no scenario made: an infrastructure
error), it is judged like any other time (docs/reliability.md, "MatrixOne faults: the
operator's job, not an outage"). Targets that cannot make HAKeeper unreachable skip them; on
kind the real log service can be frozen (hang) but not made to refuse, so there the first
scenario ends inconclusive, saying so.
"""

from __future__ import annotations

import pytest

from mochaos.scenario import (
    Scenario,
    claim_bound,
    hakeeper_down,
    migration_complete,
    source_draining,
)

pytestmark = [pytest.mark.scenario, pytest.mark.matrixone("hakeeper")]

OUTAGE = 20.0
"""How long HAKeeper stays unreachable (operator seconds): longer than the claim
controller's retry of a bound claim it cannot keep working (15 s)."""


def test_hakeeper_unreachable_while_the_source_drains(scenario: Scenario):
    """HAKeeper refuses the operator from the moment the migration's source pod is Draining
    (the claim's passes over its target, the store's, the pool's calls fail), for 20 s; the
    source's last session ends meanwhile. The migration must still complete."""
    sc = scenario
    sc.topology.pool("pool", max_idle=2)
    x = sc.topology.claim("x")
    source = sc.topology.pod_of(x)
    sc.topology.set_sessions(source, 1)  # the drain waits for this session
    migration = sc.agent.request_migration(x)
    draining = sc.when(source_draining(x, source), timeout=sc.waits.migration_phase)
    down = sc.inject(hakeeper_down(seconds=sc.options.scaled(OUTAGE)), trigger=draining)
    sc.topology.set_sessions(source, 0)  # the client leaves while HAKeeper is away
    sc.when_back(down, timeout=sc.options.scaled(OUTAGE) + 30)
    sc.when(migration_complete(x, migration.target), timeout=sc.waits.migration_phase)


def test_hakeeper_hangs_while_a_claim_binds(scenario: Scenario):
    """HAKeeper answers nothing (each call fails on the operator's own timeout: the 1 s of
    its discovery) while a new claim binds, for 20 s. The claim must bind once HAKeeper is
    back, on one pod."""
    sc = scenario
    sc.topology.pool("pool", max_idle=2)
    down = sc.inject(hakeeper_down(seconds=sc.options.scaled(OUTAGE), how="hang"))
    x = sc.topology.claim("x", wait_bound=False)
    sc.when_back(down, timeout=sc.options.scaled(OUTAGE) + 30)
    sc.when(claim_bound(x), timeout=sc.waits.bind)
