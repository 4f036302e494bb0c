"""The MatrixOne double on the local cluster: LogSets and pods in, MatrixOne out."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import threading
import time

import pytest
from kubernetes import client

from mochaos.doubles.matrixone import SPEC, build, files
from mochaos.doubles.matrixone.client import ComponentFault, Refused
from mochaos.errors import UsageError
from mochaos.observe.periods import watch

from ..waiting import wait_for

GROUP, VERSION = "core.matrixorigin.io", "v1alpha1"


def cn_uuid(pod: str, subdomain: str, namespace: str) -> str:
    """The CN start script's `echo ADDR | sha256sum | od -x | awk …`, as a test oracle."""
    digest = hashlib.sha256(f"{pod}.{subdomain}.{namespace}.svc\n".encode()).hexdigest()
    words = [digest[i + 1] + digest[i] for i in range(0, 16, 2)]  # little-endian byte pairs
    words = ["".join(f"{ord(c):02x}" for c in w) for w in words]
    return f"{words[0]}{words[1]}-{words[2]}-{words[3]}-{words[4]}-{words[5]}{words[6]}{words[7]}"


def create(kube, namespace: str, plural: str, kind: str, name: str, body: dict) -> None:
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        GROUP, VERSION, namespace, plural,
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": {"name": name}, **body},
    )  # fmt: skip


def mo_pod(name: str, component: str, instance: str, subdomain: str) -> dict:
    return {
        "metadata": {
            "name": name,
            "labels": {
                "matrixorigin.io/component": component,
                "matrixorigin.io/instance": instance,
            },
        },
        "spec": {
            "subdomain": subdomain,
            "containers": [{"name": "main", "image": "matrixorigin/matrixone:1.2.3"}],
        },
    }


def running(mo, namespace: str) -> bool:
    """Whether the double's MatrixOne cluster of the namespace is up."""
    return mo.clusters().get(namespace, {}).get("state") == "running"


def probe(*args: str, fails: bool = False) -> dict:
    """`matrixone-double probe …`: the operator's own clients against an address (with
    ``fails``: the call must fail; its error as ``{"error"}``)."""
    binary = build.component().path(build.BINARY)
    out = subprocess.run(
        [str(binary), "probe", *args], capture_output=True, text=True, timeout=60, check=False
    )
    if fails:
        assert out.returncode != 0, f"the probe answered: {out.stdout}"
        return {"error": out.stderr.strip().splitlines()[-1]}
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def mo_namespace(kube, namespace: str, mo_double) -> str:
    """A namespace with a LogSet, a draining CNSet, a TN pod and two CN pods."""
    logset = {
        "replicas": 1,
        "volume": {"size": "1Gi"},
        "sharedStorage": {"fileSystem": {"path": "/data/shared"}},
    }
    create(kube, namespace, "logsets", "LogSet", "mo", {"spec": logset})
    create(kube, namespace, "cnsets", "CNSet", "pool-cn",
           {"spec": {"replicas": 2, "scalingConfig": {"storeDrainEnabled": True}}})  # fmt: skip
    core = client.CoreV1Api(kube)
    tn = mo_pod("mo-tn-0", "DNSet", "mo", "mo-tn-headless")
    tn["spec"]["containers"][0]["env"] = [
        {"name": "HEADLESS_SERVICE_NAME", "value": "mo-tn-headless"}
    ]
    core.create_namespaced_pod(namespace, tn)
    for pod in ("pool-cn-aaaaa", "pool-cn-bbbbb"):
        core.create_namespaced_pod(namespace, mo_pod(pod, "CNSet", "pool-cn", "pool-cn-headless"))
    return namespace


def test_stores_register_under_the_operators_uuids(mo_double, mo_namespace: str) -> None:
    mo = mo_double.client

    def both():
        stores = mo.stores(mo_namespace) if running(mo, mo_namespace) else None
        return stores if stores and len(stores.cn) == 2 and stores.tn else None

    stores = wait_for(both, timeout=30, what="two CN stores and a TN store in HAKeeper")
    for pod in ("pool-cn-aaaaa", "pool-cn-bbbbb"):
        cn = stores.cn_by_uuid(cn_uuid(pod, "pool-cn-headless", mo_namespace))
        assert cn is not None, f"{pod} not under its UUID: {stores.cn}"
        assert cn.pod == pod
        # The pods' CNSet drains stores: its CNs start Draining (init-work-state).
        assert cn.work_state == "Draining"
    assert stores.tn[0].lock_service_address == f"mo-tn-0.mo-tn-headless.{mo_namespace}.svc:6003"
    # The operator's discovery path: its own HAKeeper client through the LogSet's address.
    details = probe("details", "--address", f"{stores.address}:32001")
    assert sorted(s["uuid"] for s in details["cnStores"]) == sorted(s.uuid for s in stores.cn)
    # The names the operator dials resolve to the namespace's address in the hosts file.
    hosts = (mo_double.ctx.state_dir / files.HOSTS).read_text().splitlines()
    assert f"{stores.address}\tmo-log-discovery.{mo_namespace}.svc" in hosts
    assert f"{stores.address}\tmo-tn-0.mo-tn-headless.{mo_namespace}.svc" in hosts
    info = files.namespaces(mo_double.ctx.state_dir)[mo_namespace]
    assert info["address"] == stores.address
    assert info["discovery"] == [f"mo-log-discovery.{mo_namespace}.svc:32001"]


def test_deleted_pod_leaves_hakeeper(kube, mo_double, mo_namespace: str) -> None:
    mo = mo_double.client
    gone = cn_uuid("pool-cn-aaaaa", "pool-cn-headless", mo_namespace)
    kept = cn_uuid("pool-cn-bbbbb", "pool-cn-headless", mo_namespace)

    def registered():
        return running(mo, mo_namespace) and mo.stores(mo_namespace).cn_by_uuid(gone)

    wait_for(registered, timeout=30, what="pool-cn-aaaaa registered")
    client.CoreV1Api(kube).delete_namespaced_pod("pool-cn-aaaaa", mo_namespace)
    # Heartbeats stop; HAKeeper times the store out (2 s here) and deletes it.
    wait_for(
        lambda: mo.stores(mo_namespace).cn_by_uuid(gone) is None,
        timeout=30,
        what="pool-cn-aaaaa's store leaving HAKeeper",
    )
    assert mo.stores(mo_namespace).cn_by_uuid(kept) is not None

    def removed() -> list[str]:
        events = files.read_events(mo_double.ctx.state_dir, mo_namespace)
        return [e["pod"] for e in events if e["service"] == "store" and e["method"] == "removed"]

    assert wait_for(removed, timeout=5, what="a 'removed' store event") == ["pool-cn-aaaaa"]


def test_sessions_set_are_what_showprocesslist_returns(mo_double, mo_namespace: str) -> None:
    mo = mo_double.client

    def store():
        if not running(mo, mo_namespace):
            return None
        return mo.stores(mo_namespace).cn_by_pod("pool-cn-bbbbb")

    cn = wait_for(store, timeout=30, what="pool-cn-bbbbb registered")
    assert probe("processlist", "--address", cn.query_address)["sessions"] == []
    held = mo.set_sessions(mo_namespace, "pool-cn-bbbbb", 3)
    assert (held.count, held.from_proxy) == (3, True)
    sessions = probe("processlist", "--address", cn.query_address)["sessions"]
    assert len(sessions) == 3
    assert all(s["fromProxy"] and s["account"] not in ("", "sys") for s in sessions)
    mo.set_sessions(mo_namespace, "pool-cn-bbbbb", 0)
    assert probe("processlist", "--address", cn.query_address)["sessions"] == []
    mo.set_replicas(mo_namespace, "pool-cn-bbbbb", 2)
    mo.set_pipelines(mo_namespace, "pool-cn-bbbbb", 4)
    assert probe("replicas", "--address", cn.query_address)["count"] == 2
    assert probe("pipelines", "--address", cn.query_address)["count"] == 4
    # The TN's lock service: a bound CN with open transactions cannot restart yet.
    tn = mo.stores(mo_namespace).tn[0]
    lock_address = f"{mo.stores(mo_namespace).address}:{tn.lock_service_address.rsplit(':')[1]}"
    mo.set_lock(mo_namespace, "pool-cn-bbbbb", bound=True, remain_txns=1)
    state = probe("lock", "--address", lock_address, "--uuid", cn.uuid, "--set-restart")
    assert state == {"setRestart": True, "canRestart": False, "remainTxn": 1}
    assert mo.set_lock(mo_namespace, "pool-cn-bbbbb", remain_txns=0).status == "canRestart"
    state = probe("lock", "--address", lock_address, "--uuid", cn.uuid)
    assert state == {"canRestart": True, "remainTxn": 0}


def test_control_errors_name_the_problem(mo_double, mo_namespace: str) -> None:
    mo = mo_double.client
    with pytest.raises(UsageError, match="no MatrixOne cluster in namespace"):
        mo.set_sessions("no-such-namespace", "pool-cn-aaaaa", 1)
    wait_for(lambda: running(mo, mo_namespace), timeout=30, what="the cluster")
    with pytest.raises(UsageError, match="runs no CN store"):
        mo.set_sessions(mo_namespace, "no-such-pod", 1)
    wait_for(
        lambda: mo.stores(mo_namespace).cn_by_pod("pool-cn-aaaaa"),
        timeout=30,
        what="pool-cn-aaaaa registered",
    )
    with pytest.raises(UsageError, match="count"):
        mo.set_sessions(mo_namespace, "pool-cn-aaaaa", -1)


def test_logset_deleted_tears_the_cluster_down(kube, mo_double, mo_namespace: str) -> None:
    mo = mo_double.client
    wait_for(lambda: running(mo, mo_namespace), timeout=30, what="the cluster")
    hosts = mo_double.ctx.state_dir / files.HOSTS
    assert f"mo-log-discovery.{mo_namespace}.svc" in hosts.read_text()
    client.CustomObjectsApi(kube).delete_namespaced_custom_object(
        GROUP, VERSION, mo_namespace, "logsets", "mo"
    )
    wait_for(lambda: mo_namespace not in mo.clusters(), timeout=30, what="the cluster gone")

    def forgotten() -> bool:
        return f"mo-log-discovery.{mo_namespace}.svc" not in hosts.read_text() and (
            mo_namespace not in files.namespaces(mo_double.ctx.state_dir)
        )

    wait_for(forgotten, timeout=10, what="hosts file and namespaces.json forgetting it")


def test_health_reports_a_stopped_double(mo_double) -> None:
    assert SPEC.health(mo_double.ctx) is None
    stopped = type(mo_double.ctx)(
        cluster_name="x",
        kubeconfig=mo_double.ctx.kubeconfig,
        state_dir=mo_double.ctx.state_dir.parent / "never-started",
        log_path=mo_double.ctx.log_path,
    )
    stopped.state_dir.mkdir(exist_ok=True)
    problem = SPEC.health(stopped)
    assert problem is not None and "no control address" in problem


def test_a_fault_is_no_outage_but_a_frozen_double_is(mo_double, mo_namespace: str) -> None:
    """The recorder's own probe of the double (periods.watch over the health check that
    LocalProvider.dependency_checks runs): HAKeeper made unreachable to the operator records
    no outage — though the operator's own client cannot reach it — while the double frozen
    (SIGSTOP: the whole process down for every namespace) records one."""
    mo = mo_double.client
    tns = wait_for(lambda: running(mo, mo_namespace) and mo.stores(mo_namespace).tn,
                   timeout=30, what="the cluster with its TN")  # fmt: skip
    address = f"{mo.stores(mo_namespace).address}:32001"
    with pytest.raises(Refused, match="runs no CN store for pod no-such-pod") as err:
        mo.set_fault(mo_namespace, "query/no-such-pod", down=True)
    assert err.value.status == 404
    edges: list[tuple[str, str]] = []
    stop = threading.Event()
    watcher = threading.Thread(
        target=watch, args=(lambda: SPEC.health(mo_double.ctx),), daemon=True,
        kwargs={"edge": lambda which, **kw: edges.append((which, kw.get("reason", ""))),
                "stop": stop},
    )  # fmt: skip
    watcher.start()
    try:
        fault = mo.set_fault(mo_namespace, "hakeeper", down=True)
        assert fault == ComponentFault("hakeeper", "refuse", (address,))
        assert mo.faults(mo_namespace) == [fault]
        assert "refused" in probe("details", "--address", address, fails=True)["error"]
        time.sleep(1.0)  # four looks of the probe with the fault standing
        assert edges == [], edges
        mo.set_fault(mo_namespace, "hakeeper", down=False)
        assert mo.faults(mo_namespace) == []
        assert probe("details", "--address", address)["tnStores"] == [
            {"uuid": tns[0].uuid, "lockServiceAddress": tns[0].lock_service_address}
        ]
        os.kill(mo_double.process.pid, signal.SIGSTOP)
        try:
            wait_for(lambda: edges, timeout=40, what="the frozen double recorded as an outage")
        finally:
            os.kill(mo_double.process.pid, signal.SIGCONT)
        wait_for(lambda: len(edges) == 2, timeout=40, what="its end")
    finally:
        stop.set()
        watcher.join(timeout=30)
    assert [e for e, _ in edges] == ["start", "end"] and "not answering" in edges[0][1], edges
