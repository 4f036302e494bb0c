"""Namespaces made ready ahead, on the local cluster, with a stand-in for the manager's start.

The stand-in prepare does what a real manager's start does from the pool's point of view:
it announces the manager as soon as it runs, takes a while, and returns it (or fails).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos import namespaces, runstate
from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.errors import InfraError
from mochaos.operator.runtime.warm import MEMORY_FLOOR, Warm, WarmNamespaces
from mochaos.operator.target import Waits

from support.polling import wait_until


class Manager:
    """Stands in for a started manager: only its stop (and teardown wait) matter to the pool."""

    waits = Waits(teardown=5)

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()


class Prepare:
    """Records each preparation; ``delay`` seconds each, failing while ``fail`` is set."""

    def __init__(self, delay: float = 0.2) -> None:
        self.delay = delay
        self.fail = False
        self.block = threading.Event()
        self.block.set()
        self.managers: dict[str, Manager] = {}
        self.folders: list[Path] = []

    def __call__(self, warm: Warm) -> Manager:
        manager = Manager(warm.namespace)
        self.managers[warm.namespace] = manager
        self.folders.append(warm.folder)
        warm.started(manager)
        time.sleep(self.delay)
        while not self.block.wait(0.05):
            if warm.cancel.is_set():  # as the MatrixOne wait gives up when cancelled
                manager.stop()
                raise InfraError("MatrixOne LogSet and DNSet: the wait was cancelled")
        if self.fail:
            manager.stop()  # as the manager's start does when its MatrixOne fails
            raise RuntimeError("the LogSet never became Ready")
        return manager


def exists(kube, name: str) -> bool:
    try:
        ns = client.CoreV1Api(kube).read_namespace(name)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return ns.status.phase != "Terminating"


def registered() -> set[str]:
    return set(json.loads(runstate._own_file().read_text()).get("namespaces", {}))


def pool(cluster, mochaos, prepare: Prepare, **kw) -> WarmNamespaces:
    return WarmNamespaces(cluster, run_id=mochaos.run_id, size=1, prepare=prepare, **kw)


def test_a_namespace_is_handed_out_ready_and_replaced_local(cluster, kube, mochaos):
    prepare = Prepare()
    warm = pool(cluster, mochaos, prepare)
    try:
        name = warm.take()
        assert name is not None and name.startswith("mc-") and "warm-" in name
        labels = client.CoreV1Api(kube).read_namespace(name).metadata.labels
        assert labels[RUN_ID_LABEL] == mochaos.run_id
        assert name in registered()  # reaped like any other namespace after a crash
        assert warm.running(name) is prepare.managers[name]
        assert warm.running(name) is None  # handed over once
        # A replacement is prepared while the test runs.
        wait_until(lambda: len(prepare.managers) == 2, "a replacement", timeout=30)
    finally:
        warm.close()
    (spare,) = set(prepare.managers) - {name}
    assert not exists(kube, spare)
    assert prepare.managers[spare].stopped.is_set()
    assert spare not in registered()
    assert not prepare.managers[name].stopped.is_set()  # the test's own: its fixture stops it
    assert all(not f.exists() for f in prepare.folders)
    # What the test's namespace fixture does at its end.
    namespaces.delete(kube, name, grace=5)
    runstate.unregister_namespace(name)


def test_a_failed_preparation_falls_back_to_a_fresh_namespace_local(cluster, kube, mochaos):
    prepare = Prepare()
    prepare.fail = True
    warm = pool(cluster, mochaos, prepare)
    try:
        assert warm.take() is None
        failed = next(iter(prepare.managers))  # the first; a replacement may be under way
        assert prepare.managers[failed].stopped.is_set()
        assert not exists(kube, failed)
    finally:
        warm.close()


def test_nothing_is_prepared_without_memory_to_spare_local(cluster, mochaos):
    prepare = Prepare()
    warm = pool(cluster, mochaos, prepare, memory=lambda: MEMORY_FLOOR - 1)
    try:
        time.sleep(1.5)
        assert warm.take() is None
        assert prepare.managers == {}
    finally:
        warm.close()


def test_close_stops_a_preparation_under_way_at_once_local(cluster, kube, mochaos):
    prepare = Prepare(delay=0.0)
    prepare.block.clear()  # the MatrixOne set-up never ends on its own
    warm = pool(cluster, mochaos, prepare)
    wait_until(lambda: len(prepare.managers) == 1, "a preparation", timeout=30)
    (name,) = prepare.managers
    t0 = time.monotonic()
    warm.close()
    assert time.monotonic() - t0 < 20
    assert prepare.managers[name].stopped.is_set()
    assert not exists(kube, name)
    prepare.block.set()
