"""The face of mo-chaos for suite authors: every name a scenario test needs, and no more.

.. code-block:: python

    from mochaos.scenario import Scenario, delete_pod, target_bound

    def test_delete_target(scenario: Scenario):
        sc = scenario
        sc.topology.pool("pool", max_idle=2)
        x = sc.topology.claim("x")
        migration = sc.agent.request_migration(x)
        bound = sc.when(target_bound(x, migration.target), timeout=sc.waits.migration_phase)
        sc.inject(delete_pod(migration.target), trigger=bound)

The fixture ends it (settle, epilogue, verdict) when the test returns. Faults are values of
:mod:`mochaos.faults` (one table); predicates are named functions of the recorded state;
the named workloads are the suites' fault-free parts. The modules behind this face
(``mochaos.scenario._*``) are private: their names may change without notice.
"""

from mochaos.ctrl.objects import CLAIMED_BY_LABEL, PHASE_LABEL
from mochaos.errors import Inconclusive
from mochaos.faults import (
    FAULTS,
    Fault,
    FaultKind,
    crash_after_write,
    delete_claim,
    delete_pod,
    fail_write,
    hakeeper_down,
    hold_write,
    kill_operator,
    lockservice_down,
    pause_operator,
    query_down,
    remove_label,
    restart_operator,
    restart_stale,
    scale_claimset,
    scale_in,
    scale_out,
    stale_view,
    unobserved,
)
from mochaos.observe.history import State
from mochaos.observe.vocabulary import FINALIZE_ATTEMPT
from mochaos.report.result import ScenarioResult
from mochaos.scenario._agent import Migration
from mochaos.scenario._engine import Scenario
from mochaos.scenario._gate import Fired
from mochaos.scenario._predicates import (
    MIGRATION_PHASES,
    Predicate,
    all_of,
    bound_claims_at_least,
    claim_bound,
    claim_deleting_in,
    claim_spec,
    deletion_cost_is,
    held_by_set,
    idle_pods_at_least,
    migration_complete,
    name_of,
    named,
    pod_has_phase,
    pod_phase,
    pod_unlabelled,
    source_draining,
    source_reclaimed,
    target_bound,
)
from mochaos.scenario._workloads import (
    BIND,
    MIGRATION,
    MIGRATION_RACE,
    POD_LOSS,
    SCALE,
    WORKLOADS,
    NamedWorkload,
    SeedTopology,
    build_seed,
    get_workload,
)

__all__ = [
    "BIND",
    "CLAIMED_BY_LABEL",
    "FAULTS",
    "FINALIZE_ATTEMPT",
    "MIGRATION",
    "MIGRATION_PHASES",
    "MIGRATION_RACE",
    "PHASE_LABEL",
    "POD_LOSS",
    "SCALE",
    "WORKLOADS",
    "Fault",
    "FaultKind",
    "Fired",
    "Inconclusive",
    "Migration",
    "NamedWorkload",
    "Predicate",
    "Scenario",
    "ScenarioResult",
    "SeedTopology",
    "State",
    "all_of",
    "bound_claims_at_least",
    "build_seed",
    "claim_bound",
    "claim_deleting_in",
    "claim_spec",
    "crash_after_write",
    "delete_claim",
    "delete_pod",
    "deletion_cost_is",
    "fail_write",
    "get_workload",
    "hakeeper_down",
    "held_by_set",
    "hold_write",
    "idle_pods_at_least",
    "kill_operator",
    "lockservice_down",
    "migration_complete",
    "name_of",
    "named",
    "pause_operator",
    "pod_has_phase",
    "pod_phase",
    "pod_unlabelled",
    "query_down",
    "remove_label",
    "restart_operator",
    "restart_stale",
    "scale_claimset",
    "scale_in",
    "scale_out",
    "source_draining",
    "source_reclaimed",
    "stale_view",
    "target_bound",
    "unobserved",
]
