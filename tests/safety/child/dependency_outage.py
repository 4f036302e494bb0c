"""Run by the safety tests as a child pytest on a private local cluster: the seed scenario
with the cluster's doubles stopped mid-scenario — the MatrixOne double, then the workload
controller (kruise-manager) — through the local cluster's own stop/start API, each for
``OUTAGE`` seconds; or kruise-manager killed, for the supervisor to restart. The model
needs neither: they are provided first, as a real target's install would.

Not collected by ``pytest tests/``. It refuses any cluster but a private local
``mc-safety-*`` one: it really stops that cluster's doubles.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from mochaos.cluster.environment import Environment
from mochaos.cluster.local import doubles_host
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.errors import UsageError
from mochaos.kruise import manager
from mochaos.kruise.module import DEFAULT_VERSION
from mochaos.kube import Cluster
from mochaos.scenario import MIGRATION, Scenario, SeedTopology, scale_claimset, source_draining

from support.polling import wait_until

pytestmark = pytest.mark.scenario

OUTAGE = 8.0
"""Seconds each double stays down: many of the probe's periods, a few of the scenario's."""
DOUBLES = ("matrixone", "kruise")


@pytest.fixture(scope="module", autouse=True)
def dependencies(cluster: Cluster) -> None:
    """The doubles of a real target, running before the recorder looks for them."""
    if cluster.provider != "local" or not cluster.name.startswith("mc-safety-"):
        raise UsageError(
            f"refusing to stop the doubles of cluster {cluster.name} ({cluster.provider})",
            hint="run this only on a private cluster: MOCHAOS_CLUSTER_NAME=mc-safety-<x>",
        )
    LocalProvider(name=cluster.name).provide(Environment(kruise=DEFAULT_VERSION, matrixone=True))


def test_dependencies_down_mid_scenario(scenario: Scenario, cluster: Cluster):
    sc = scenario
    seed = MIGRATION.setup(sc)
    provider = LocalProvider(name=cluster.name)
    for name in DOUBLES:
        # kruise-manager closes its health endpoint as soon as it is told to stop, before
        # it exits: its outage starts here.
        sc.recorder.mark(f"{name} stopping")
        saved = provider.stop_component(name)
        try:
            time.sleep(OUTAGE)  # the outage under test, not a wait for a state
        finally:
            provider.start_component(saved)
        sc.recorder.mark(f"{name} started")
    seed_race(sc, seed)


def seed_race(sc: Scenario, seed: SeedTopology) -> None:
    """The seed's fault: X migrates onto Z's pod B, S1 scaled in once X's source drains."""
    MIGRATION.drive(sc, seed)
    draining = sc.when(source_draining(seed.x, seed.a), timeout=sc.waits.migration_phase)
    sc.inject(scale_claimset("s1", replicas=1), trigger=draining)


def test_kruise_manager_killed_mid_scenario(scenario: Scenario, cluster: Cluster):
    """A crash rather than a stop: the supervisor restarts kruise-manager on its own."""
    sc = scenario
    seed = MIGRATION.setup(sc)
    provider = LocalProvider(name=cluster.name)
    pid = doubles_host.running(manager.spec(DEFAULT_VERSION), provider.supervision)
    assert pid is not None, "kruise-manager is not running"
    sc.recorder.mark("kruise killed")
    os.kill(pid, signal.SIGKILL)
    wait_until(provider.is_healthy, timeout=120, what="kruise-manager restarted and healthy")
    sc.recorder.mark("kruise healthy again")
    seed_race(sc, seed)
