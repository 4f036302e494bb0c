"""Builders and waits for the kruise double's tests (real apiserver, kwok pods)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.observe.watching import KindWatcher

GROUP = "apps.kruise.io"
CS = (GROUP, "v1alpha1", "clonesets")
STS = (GROUP, "v1beta1", "statefulsets")
DRAINING = "matrixorigin.io/cn-draining"
STATE = "lifecycle.apps.kruise.io/state"
COST = "controller.kubernetes.io/pod-deletion-cost"
GC_TIMEOUT = 60.0
"""The garbage collector learns a newly installed CRD's kind at its next discovery refresh
(every 30 s), so on a fresh cluster collection through a kruise owner can lag that long."""


def holds(fn: Callable[[], bool], *, seconds: float) -> bool:
    """True when ``fn`` stays true for ``seconds`` (checked every 0.1 s)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not fn():
            return False
        time.sleep(0.1)
    return True


def labels(name: str) -> dict[str, str]:
    return {"matrixorigin.io/component": "Test", "matrixorigin.io/instance": name}


def cloneset(name: str, replicas: int, *, lifecycle: dict | None = None, **spec: Any) -> dict:
    """A CloneSet shaped like the operator's CNSet one (selector = template labels)."""
    body: dict[str, Any] = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels(name)},
            "template": {
                "metadata": {"labels": labels(name)},
                "spec": {
                    "subdomain": f"{name}-headless",
                    "containers": [{"name": "main", "image": "mochaos/none"}],
                    "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                },
            },
            "updateStrategy": {"type": "InPlaceIfPossible"},
            **spec,
        },
    }
    if lifecycle is not None:
        body["spec"]["lifecycle"] = lifecycle
    return body


def statefulset(name: str, replicas: int, **spec: Any) -> dict:
    """An Advanced StatefulSet shaped like the operator's LogSet one."""
    return {
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": f"{name}-headless",
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels(name)},
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible"},
            },
            "template": {
                "metadata": {"labels": labels(name)},
                "spec": {"containers": [{"name": "main", "image": "mochaos/none"}]},
            },
            **spec,
        },
    }


def pods_of(core: client.CoreV1Api, ns: str, name: str, *, live: bool = True) -> list:
    """The workload's pods by name (only those not being deleted when ``live``)."""
    selector = ",".join(f"{k}={v}" for k, v in labels(name).items())
    items = core.list_namespaced_pod(ns, label_selector=selector).items
    if live:
        items = [p for p in items if p.metadata.deletion_timestamp is None]
    return sorted(items, key=lambda p: p.metadata.name)


def names(pods: list) -> list[str]:
    return [p.metadata.name for p in pods]


def running(pods: list, count: int) -> list | None:
    """``pods`` when there are ``count`` of them and all run on a node, else None."""
    ok = len(pods) == count and all(p.status.phase == "Running" and p.spec.node_name for p in pods)
    return pods if ok else None


def condition(pod: Any, ctype: str) -> Any:
    for cond in pod.status.conditions or []:
        if cond.type == ctype:
            return cond
    return None


def gone(fn: Callable[[], Any]) -> bool:
    """True when ``fn`` raises 404."""
    try:
        fn()
    except ApiException as err:
        return err.status == 404
    return False


@contextlib.contextmanager
def pod_events(kube: client.ApiClient, namespace: str) -> Iterator[list[tuple[str, dict]]]:
    """Record the namespace's pod watch events, in order, as (event type, pod dict)."""
    seen: list[tuple[str, dict]] = []
    stop = threading.Event()
    watcher = KindWatcher(
        kube,
        kind="Pod",
        namespace=namespace,
        emit=lambda kind, event: seen.append((event.event, event.obj)),
        stop=stop,
    )
    watcher.initial_list()
    thread = threading.Thread(target=watcher.continuous_watch, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        watcher.stop()
        thread.join(timeout=5)


def first_seen(events: list[tuple[str, dict]], keep: Callable[[str, dict], bool]) -> list[str]:
    """Pod names in the order their first event passing ``keep`` arrived."""
    out: list[str] = []
    for etype, pod in list(events):
        name = pod["metadata"]["name"]
        if keep(etype, pod) and name not in out:
            out.append(name)
    return out
