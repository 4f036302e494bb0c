"""Run by the safety tests as a child pytest on a private local cluster: a scenario during
which the apiserver is stopped for a few seconds and started again.

Not collected by ``pytest tests/``. It refuses any cluster but a private local
``mc-safety-*`` one: it really stops that cluster's apiserver.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from urllib.request import Request, urlopen

import pytest

from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.cluster.local.processes import ProcessSpec
from mochaos.errors import Inconclusive, UsageError
from mochaos.kube import Cluster
from mochaos.observe.audit import complete_events
from mochaos.scenario import Scenario, claim_bound, delete_pod

pytestmark = pytest.mark.scenario

OUTAGE = 2.0
"""Seconds the apiserver stays down after its (at most 1 s) shutdown: well under the 10 s
after which the scheduler and controller-manager lose their leases and exit."""
OPERATOR_KINDS = {"cnclaims", "cnclaimsets", "cnpools", "pods"}


def compact_etcd(apiserver: ProcessSpec) -> None:
    """Compact etcd (found through the apiserver's --etcd-servers) to its current revision."""
    url = next(a.split("=", 1)[1] for a in apiserver.argv if a.startswith("--etcd-servers="))

    def post(path: str, body: dict) -> dict:
        request = Request(url + path, data=json.dumps(body).encode(),
                          headers={"Content-Type": "application/json"})  # fmt: skip
        with urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    header = post("/v3/kv/range", {"key": base64.b64encode(b"/").decode()})["header"]
    post("/v3/kv/compaction", {"revision": int(header["revision"]), "physical": True})


def watches_since(audit_log: Path, offset: int) -> set[tuple[str, str, str]]:
    """(client program, resource, namespace) of every watch opened past ``offset`` of the
    audit log (the program is the user agent up to its first ``/``)."""
    watches = complete_events(audit_log, offset, containing=b'"verb":"watch"')
    events = [e for e in watches if e.get("verb") == "watch"]
    return {
        (e["userAgent"].split("/")[0], e["objectRef"]["resource"],
         e["objectRef"].get("namespace", ""))
        for e in events
    }  # fmt: skip


def test_apiserver_restart_mid_scenario(scenario: Scenario, cluster: Cluster, record_property):
    if cluster.provider != "local" or not cluster.name.startswith("mc-safety-"):
        raise UsageError(
            f"refusing to restart the apiserver of cluster {cluster.name} ({cluster.provider})",
            hint="run this only on a private cluster: MOCHAOS_CLUSTER_NAME=mc-safety-<x>",
        )
    sc = scenario
    sc.topology.pool("pool", max_idle=1)
    x, _ = sc.topology.claimset("s1", replicas=2)
    bound = sc.when(claim_bound(x), timeout=sc.waits.bind)
    pod = sc.topology.pod_of(x)
    # The outage hits a settled system: a busy operator's error retries during an outage
    # would count against retry-budget (see the safety report), which is not under test here.
    sc.settle()
    provider = LocalProvider(name=cluster.name)
    sc.recorder.mark("apiserver stopped")
    stopped = provider.stop_component("kube-apiserver", grace=1.0)
    # Compacting etcd's history meanwhile makes every watch resuming from an older version
    # get 410 Gone: the recorder must relist and report what changed as it resumes.
    compact_etcd(stopped)
    time.sleep(OUTAGE)  # the outage under test, not a wait for a state
    assert cluster.audit_log is not None
    offset = cluster.audit_log.stat().st_size
    provider.start_component(stopped)
    sc.recorder.mark("apiserver started")
    sc.topology.set_sessions(pod, 1)  # written while the watches may still be reconnecting...
    sc.recorder.barrier(timeout=30)  # ...and in the history once they caught up
    # Chaos resumes once the operator watches every kind again, and the scheduler and kwok
    # watch pods again (their reconnect backoff is their own business, not a verdict).
    program = scenario.operator.user_agent.split("/")[0]
    needed = {(program, kind, sc.namespace) for kind in OPERATOR_KINDS} | {
        ("kube-scheduler", "pods", ""), ("kwok-controller", "pods", "")
    }  # fmt: skip
    deadline = time.monotonic() + 60
    while not needed <= (seen := watches_since(cluster.audit_log, offset)):
        if time.monotonic() > deadline:
            raise Inconclusive(f"no watch again after the restart by: {sorted(needed - seen)}")
        time.sleep(0.2)
    sc.inject(delete_pod(pod), trigger=bound)
    sc.settle()
    # The pool's replacement pod warms up for ~6 s; an epilogue before it is Idle would be
    # judged a leak (see the safety report), which is not under test here.
    sc.topology.idle_pods("pool", at_least=1)
    sc.epilogue()
    try:
        sc.verdict()
    finally:
        record_property("recorder.reconnects", sum(w.reconnects for w in sc.recorder.watchers))
        record_property("recorder.relists", sum(w.relists for w in sc.recorder.watchers))
