"""One case of an exploration, run as a scenario: workload, faults at their points, verdict.

The workload's roles are recorded first (the history says which object played what), each
point's watch sees every state from before the drive on, and the faults wait on their
points in a thread of their own while the workload drives: a point the drive passes
through is caught as it happens. A point never reached makes the case inconclusive.
"""

from __future__ import annotations

import threading

from mochaos.explore.matrix import arm, inject
from mochaos.explore.plan import Case, Exploration
from mochaos.explore.points import DRIVE_MARKER, ROLES_ACTION, PointWatch
from mochaos.scenario import Scenario, get_workload

GATE_FACTOR = 2.0
"""A point may take this many times its learn-run delay (plus a migration phase's wait)."""


def gate_timeout(sc: Scenario, first_seen: float) -> float:
    """How long a case waits for its point."""
    return sc.waits.migration_phase + GATE_FACTOR * first_seen


def run_case(sc: Scenario, exploration: Exploration, case: Case) -> None:
    """Run ``case`` in the scenario's namespace: the workload, its faults at their points;
    the scenario fixture ends it (its rules let go, settle, epilogue, verdict)."""
    workload = get_workload(exploration.workload)
    topology = workload.setup(sc)
    roles = workload.roles(topology)
    sc.writes.record(ROLES_ACTION, "Workload", workload.name, params=roles)
    watches = []
    for step in sorted(case.steps, key=lambda s: exploration.point(s.point).first_seen):
        point = exploration.point(step.point)
        if point.is_write:  # the write is the point: armed now, it takes the first such write
            arm(sc, step.fault, point, roles)
            continue
        watch = PointWatch(point, roles)
        watch.observe(sc.recorder.snapshot())
        sc.recorder.add_listener(lambda _entry, state, w=watch: w.observe(state))
        watches.append((watch, step.fault, gate_timeout(sc, point.first_seen)))
    errors: list[BaseException] = []

    def faults() -> None:
        try:
            for watch, fault, timeout in watches:
                inject(sc, fault, sc.when(watch, timeout=timeout), watch, roles)
        except BaseException as err:  # raised again in the test's thread
            errors.append(err)

    thread = threading.Thread(target=faults, name="explore-faults", daemon=True)
    thread.start()
    sc.recorder.mark(DRIVE_MARKER)
    workload.drive(sc, topology)
    thread.join()
    if errors:
        raise errors[0]
