"""#581: two claims bound to one pod when a bind races a migration (queue lag).

docs/bugs.md#i581, interleaving B: the agent points claim X at the
Idle pod B; before X's Sync labels B, a Pending claim Y binds B. Freezing the
operator while both writes land puts Y's Bind first in its queue.
"""

from __future__ import annotations

import pytest

from mochaos.scenario import BIND, Scenario, claim_bound, pause_operator

pytestmark = pytest.mark.scenario


def test_double_binding_during_migration(scenario: Scenario):
    """Y's Bind must skip the pod X's migration already names."""
    sc = scenario
    bind = BIND.setup(sc)
    sc.inject(pause_operator(seconds=max(sc.options.scaled(10), 2.0)))
    BIND.drive(sc, bind)
    sc.when(claim_bound(bind.y), timeout=sc.waits.bind)
