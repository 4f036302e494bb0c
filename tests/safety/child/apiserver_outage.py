"""Run by the safety tests as a child pytest on a private local cluster: a scenario during
which the apiserver is frozen (SIGSTOP) for 30 s, long enough for the scheduler and the
controller-manager to lose their leases and exit; the supervisor brings them back.

Not collected by ``pytest tests/``. It refuses any cluster but a private local
``mc-safety-*`` one: it really freezes that cluster's apiserver.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.errors import UsageError
from mochaos.kube import Cluster
from mochaos.scenario import Scenario, claim_bound, delete_pod

pytestmark = pytest.mark.scenario

OUTAGE = 30.0
"""Seconds the apiserver stays frozen: three times the 10 s after which the scheduler and
the controller-manager give up their leases and exit."""
HEAL_TIMEOUT = 90.0
"""Seconds the cluster may take to be whole again on its own after the outage."""


def test_apiserver_outage_mid_scenario(scenario: Scenario, cluster: Cluster, record_property):
    if cluster.provider != "local" or not cluster.name.startswith("mc-safety-"):
        raise UsageError(
            f"refusing to freeze the apiserver of cluster {cluster.name} ({cluster.provider})",
            hint="run this only on a private cluster: MOCHAOS_CLUSTER_NAME=mc-safety-<x>",
        )
    sc = scenario
    sc.topology.pool("pool", max_idle=1)
    x, _ = sc.topology.claimset("s1", replicas=2)
    bound = sc.when(claim_bound(x), timeout=sc.waits.bind)
    pod = sc.topology.pod_of(x)
    sc.settle()
    provider = LocalProvider(name=cluster.name)
    apiserver = provider.running_pids()["kube-apiserver"]
    sc.recorder.mark("apiserver frozen")
    os.kill(apiserver, signal.SIGSTOP)
    try:
        time.sleep(OUTAGE)  # the outage under test, not a wait for a state
    finally:
        os.kill(apiserver, signal.SIGCONT)
    sc.recorder.mark("apiserver resumed")
    # Nobody helps: the cluster must be whole again through its supervisor alone.
    t0 = time.monotonic()
    while not provider.is_healthy():
        assert time.monotonic() - t0 < HEAL_TIMEOUT, provider.status()
        time.sleep(0.5)
    record_property("cluster.heal_seconds", round(time.monotonic() - t0, 1))
    sc.topology.set_sessions(pod, 1)
    sc.recorder.barrier(timeout=30)
    sc.inject(delete_pod(pod), trigger=bound)
    sc.settle()
    sc.topology.idle_pods("pool", at_least=1)
    sc.epilogue()
    sc.verdict()
