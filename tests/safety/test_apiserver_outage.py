"""A 30 s apiserver outage mid-scenario: no false verdict, and the cluster heals by itself.

The scheduler and the controller-manager exit when they lose their leases; the local
cluster's supervisor restarts them, the restarts are in the cluster's events file, in
the scenario's history (markers of component ``cluster``) and in its result's findings.
"""

from __future__ import annotations

import json

from mochaos.cluster import events
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.observe.history import APISERVER_OUTAGE, History, Marker
from mochaos.observe.recorder import CLUSTER_COMPONENT

from support.child_runs import CHILD, child_env, needs_binaries

SCENARIO = "test_apiserver_outage_mid_scenario"
OUTAGE = 30.0


def marker(history: History, label: str) -> Marker:
    (found,) = (m for m in history.markers() if m.label == label)
    return found


@needs_binaries
def test_a_30s_apiserver_outage_gives_no_false_verdict_and_heals(child, private_cluster):
    env = child_env(MOCHAOS_CLUSTER_NAME=private_cluster)
    run = child(str(CHILD / "apiserver_outage.py"), "--operator", "model:fixed", env=env)
    case = run.case(SCENARIO)
    assert case.outcome == "passed", (case.message, case.text[-3000:], run.output[-3000:])
    provider = LocalProvider(name=private_cluster)
    assert provider.is_healthy(), provider.status()

    (test,) = json.loads((run.run_dir() / "summary.json").read_text())["tests"]
    statuses = {v["invariant"]: v["status"] for v in test["verdicts"]}
    assert "fail" not in statuses.values(), statuses
    (folder,) = (p for p in run.run_dir().iterdir() if p.name.endswith(f".{SCENARIO}"))
    history = History.from_jsonl(folder / "history.jsonl")
    frozen, resumed = marker(history, "apiserver frozen"), marker(history, "apiserver resumed")
    # The leases were lost during the outage: something exited and was restarted.
    restarted = [e for e in events.read(provider.events_log()) if frozen.t <= e.t]
    assert {"kube-scheduler", "kube-controller-manager"} & {e.component for e in restarted}, (
        restarted
    )
    assert all(e.event == "restarted" for e in restarted), restarted
    # The recorder saw the apiserver stop answering (the invariants' clock leaves that out)...
    cluster_markers = [m for m in history.markers() if m.component == CLUSTER_COMPONENT]
    (down, up) = history.period_edges(APISERVER_OUTAGE)
    assert (down.edge, up.edge) == ("start", "end")
    assert frozen.t <= down.t < up.t and up.t - down.t > OUTAGE - 5, (down, up)
    # ...and each restart is in the history as a cluster marker, all in the findings.
    restart_markers = [m.label for m in cluster_markers]
    assert restart_markers == [e.describe() for e in restarted]
    findings = [f for f in test["findings"] if f.startswith("cluster: ")]
    assert findings == [m.label for m in cluster_markers], test["findings"]
    assert resumed.seq > frozen.seq
    print(f"healed {case.properties['cluster.heal_seconds']}s after the outage; restarts:")
    for e in restarted:
        print(f"  +{e.t - frozen.t:.1f}s {e.describe()}")
