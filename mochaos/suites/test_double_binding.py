"""#581: two claims bound to one pod when a bind races a migration (queue lag).

docs/bugs.md#i581, interleaving B: the agent points claim X at the
Idle pod B; before X's Sync labels B, a Pending claim Y binds B. Freezing the
operator while both writes land puts Y's Bind first in its queue.
"""

from __future__ import annotations

import pytest

from mochaos.scenario.engine import Scenario
from mochaos.scenario.predicates import claim_bound

pytestmark = pytest.mark.scenario


def test_double_binding_during_migration(scenario: Scenario):
    """Y's Bind must skip the pod X's migration already names."""
    sc = scenario
    sc.pool("pool", max_idle=1)
    (x,) = sc.claimset("s1", replicas=1)
    sc.idle_pods("pool", at_least=1)
    target = sc.agent.pick_target(x)
    sc.pause_operator(max(sc.options.scaled(10), 2.0))
    y = sc.claim("y", wait_bound=False)
    sc.agent.request_migration(x, target=target)
    sc.wait(claim_bound(y), timeout=sc.waits.bind)
    sc.settle()
    sc.epilogue()
    sc.verdict()
