"""An apiserver restart mid-scenario: the watches resume, no history is lost, no false verdict.

A private local cluster (fixed apiserver port) runs a fixed-profile scenario in a
child pytest; the child stops and starts that cluster's apiserver in the middle.
"""

from __future__ import annotations

import json
import socket
from collections import defaultdict

import pytest
import yaml

from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.ctrl.objects import SESSIONS_ANNOTATION
from mochaos.errors import InfraError, UsageError
from mochaos.observe.history import ActionRecord, Change, History, Marker

from support.child_runs import CHILD, child_env, needs_binaries, private_cluster_name

SCENARIO = "test_apiserver_restart_mid_scenario"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def seq_of(history: History, label: str) -> int:
    (marker,) = (m for m in history.markers() if m.label == label)
    assert isinstance(marker, Marker)
    return marker.seq


def first_version_after(history: History, action: ActionRecord) -> Change | None:
    """The first recorded version of the object ``action`` wrote that is newer than its write."""
    assert action.write_rv is not None
    return next((c for c in history.changes()
                 if (c.kind, c.name) == (action.kind, action.name) and c.rv > action.write_rv),
                None)  # fmt: skip


def carries(change: Change, action: ActionRecord) -> bool:
    """Whether ``change`` shows the effect of ``action`` (a pod's session count or annotations)."""
    annotations = change.obj.get("metadata", {}).get("annotations") or {}
    if action.action == "set_sessions":
        return annotations.get(SESSIONS_ANNOTATION) == str(action.params["sessions"])
    if action.action == "annotate_pod":
        wanted = action.params["annotations"]
        return all(annotations.get(k) == v for k, v in wanted.items() if v is not None)
    return False


@needs_binaries
def test_an_apiserver_restart_mid_scenario_loses_no_history(child, private_cluster):
    port = free_port()
    env = child_env(MOCHAOS_CLUSTER_NAME=private_cluster, MOCHAOS_APISERVER_PORT=str(port))
    run = child(str(CHILD / "apiserver_restart.py"), "--operator", "model:fixed", env=env)
    case = run.case(SCENARIO)
    # The cluster was the private one, on the port asked for.
    kubeconfig = yaml.safe_load(LocalProvider(name=private_cluster).kubeconfig_path().read_text())
    assert kubeconfig["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{port}"

    # No false verdict: every invariant passed.
    assert case.outcome == "passed", (case.message, case.text[-3000:], run.output[-3000:])
    run_dir = run.run_dir()
    (test,) = json.loads((run_dir / "summary.json").read_text())["tests"]
    statuses = {v["invariant"]: v["status"] for v in test["verdicts"]}
    assert "fail" not in statuses.values(), statuses
    assert statuses["bound-has-pod"] == statuses["pod-claim-agreement"] == "pass", statuses
    # The watches really were cut and resumed, and relisted after 410 Gone (etcd compacted).
    assert int(case.properties["recorder.reconnects"]) > 0, case.properties
    assert int(case.properties["recorder.relists"]) > 0, case.properties

    (folder,) = (p for p in run_dir.iterdir() if p.name.endswith(f".{SCENARIO}"))
    history = History.from_jsonl(folder / "history.jsonl")
    started = seq_of(history, "apiserver started")
    assert seq_of(history, "apiserver stopped") < started
    # Every object's versions arrive in order, each once.
    versions: dict[tuple[str, str], list[int]] = defaultdict(list)
    for change in history.changes():
        if change.kind in ("CNClaim", "CNClaimSet", "CNPool", "Pod"):
            versions[change.kind, change.name].append(change.rv)
    for key, rvs in versions.items():
        assert rvs == sorted(set(rvs)), (key, rvs)
    # Our writes are all in the history. One made while the watches were down may have been
    # overwritten before the recorder relisted (a relist sees only the newest version: the
    # set_sessions call writes the pod twice and the operator answers with a write of its
    # own): then the version the relist reported is newer and carries the write's effect.
    seen = {(c.kind, c.name, c.rv) for c in history.changes()}
    writes = [a for a in history.actions() if a.write_rv is not None]
    assert writes, "no recorded write"
    for action in writes:
        assert isinstance(action, ActionRecord)
        if (action.kind, action.name, action.write_rv) not in seen:
            assert action.seq > started, action  # only a write of the outage's aftermath
            superseding = first_version_after(history, action)
            assert superseding is not None, action
            assert carries(superseding, action), (action, superseding.obj["metadata"])
    (gap_write,) = (a for a in history.actions("set_sessions"))
    assert gap_write.seq > started
    after = [e for e in history if isinstance(e, Change) and e.seq > started]
    assert any(c.kind == "CNClaim" for c in after), "no claim change after the restart"


def test_stopping_a_component_that_does_not_run_or_exist_says_so():
    provider = LocalProvider(name=private_cluster_name())
    name = provider.cluster_name
    with pytest.raises(InfraError, match=f"^kube-apiserver of cluster {name} is not running"):
        provider.stop_component("kube-apiserver")
    with pytest.raises(UsageError, match="unknown component 'apiserver': use one of: etcd, "):
        provider.stop_component("apiserver")
