"""The handle on an in-cluster operator: restart, kill that stays down, a real pause, identity."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from mochaos.errors import InfraError
from mochaos.matrixone.waits import Timings
from mochaos.operator.runtime.in_cluster_operator import InClusterOperator
from mochaos.operator.runtime.pod_freezer import Frozen

REF = "matrixorigin/matrixone-operator:nightly-abc1234-20260601"


def pod(name: str, *, created: float, ready: bool = True) -> Any:
    return SimpleNamespace(
        metadata=SimpleNamespace(
            name=name, uid=f"uid-{name}", creation_timestamp=created, deletion_timestamp=None
        ),
        spec=SimpleNamespace(node_name="mochaos-control-plane"),
        status=SimpleNamespace(
            phase="Running",
            conditions=[SimpleNamespace(type="Ready", status="True" if ready else "False")],
        ),
    )


class FakeCore:
    def __init__(self, *pods: Any) -> None:
        self.pods = list(pods)
        self.deleted: list[tuple[str, int | None]] = []
        self.on_delete = None

    def list_namespaced_pod(self, namespace: str, **kw: Any) -> Any:
        return SimpleNamespace(items=list(self.pods))

    def delete_namespaced_pod(self, name: str, namespace: str, **kw: Any) -> None:
        self.deleted.append((name, kw.get("grace_period_seconds")))
        if self.on_delete:
            self.on_delete(name)


class FakeApps:
    def __init__(self, core: FakeCore, replicas: int = 1) -> None:
        self.core = core
        self.replicas = replicas
        self.scaled: list[int] = []

    def read_namespaced_deployment(self, name: str, namespace: str, **kw: Any) -> Any:
        return SimpleNamespace(spec=SimpleNamespace(replicas=self.replicas))

    def patch_namespaced_deployment_scale(self, name: str, namespace: str, body, **kw) -> None:
        self.scaled.append(body["spec"]["replicas"])
        if body["spec"]["replicas"] > 0:  # the Deployment brings a new pod
            self.core.pods = [pod(f"op-{len(self.scaled)}", created=10.0 + len(self.scaled))]


class FakeFreezer:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.thawed = threading.Event()

    def freeze(self, p: Any) -> Frozen:
        self.calls.append(f"freeze {p.metadata.name}")
        return Frozen(p.spec.node_name, ("cid",))

    def thaw(self, frozen: Frozen) -> None:
        self.calls.append(f"thaw {frozen.node}")
        self.thawed.set()


class FakeSessions:
    def __init__(self) -> None:
        self.closed = 0

    def hold(self, pod: str, n: int) -> None:
        pass

    def release(self, pod: str) -> None:
        pass

    def close(self) -> None:
        self.closed += 1


def handle(core: FakeCore, *, freezer: Any = None, sessions: Any = None) -> InClusterOperator:
    return InClusterOperator(
        target=f"image:{REF}", version="v", api_client=None, namespace="mo-system",
        deployment="mo-matrixone-operator", selector="app.kubernetes.io/instance=mo",
        progress=lambda line: None, core=core, apps=FakeApps(core), freezer=freezer,
        sessions=sessions, timings=Timings(image_pull=0, margin=0.01),
    )  # fmt: skip


def test_restart_deletes_the_pod_gracefully_and_waits_for_a_new_ready_one() -> None:
    core = FakeCore(pod("op-a", created=1.0))
    core.on_delete = lambda name: setattr(core, "pods", [pod("op-b", created=2.0)])
    op = handle(core)
    op.restart()
    assert core.deleted == [("op-a", None)]


def test_a_restart_that_never_gets_a_new_pod_names_what_it_waited_for() -> None:
    core = FakeCore(pod("op-a", created=1.0))
    op = handle(core)
    with pytest.raises(InfraError) as info:
        op.restart()
    assert str(info.value).startswith("operator mo-matrixone-operator not ready after ")
    assert "waiting for a new Ready pod (old: op-a)" in str(info.value)


def test_kill_scales_to_zero_and_deletes_without_grace_and_restart_brings_it_back() -> None:
    core = FakeCore(pod("op-a", created=1.0))
    op = handle(core)
    apps = op._apps()
    op.kill()
    assert apps.scaled == [0]
    assert core.deleted == [("op-a", 0)]
    core.pods = []  # gone, and nothing replaces it while killed
    op.restart()
    assert apps.scaled == [0, 1]
    assert core.deleted == [("op-a", 0)]


def test_stop_brings_a_killed_operator_back_and_closes_the_sessions() -> None:
    core = FakeCore(pod("op-a", created=1.0))
    sessions = FakeSessions()
    op = handle(core, sessions=sessions)
    op.kill()
    op.stop()
    assert op._apps().scaled == [0, 1]
    assert sessions.closed == 1
    op.stop()
    assert op._apps().scaled == [0, 1]


def test_pause_freezes_the_running_pod_and_thaws_it_after_the_time() -> None:
    freezer = FakeFreezer()
    op = handle(FakeCore(pod("op-a", created=1.0)), freezer=freezer)
    op.pause(0.05)
    assert freezer.calls[0] == "freeze op-a"
    assert freezer.thawed.wait(30)
    assert freezer.calls == ["freeze op-a", "thaw mochaos-control-plane"]
    assert op._apps().scaled == []  # a pause is not a restart


def test_a_second_pause_extends_the_first_and_stop_thaws_at_once() -> None:
    freezer = FakeFreezer()
    op = handle(FakeCore(pod("op-a", created=1.0)), freezer=freezer)
    op.pause(3600)
    op.pause(3600)
    assert freezer.calls == ["freeze op-a"]
    op.stop()
    assert freezer.calls == ["freeze op-a", "thaw mochaos-control-plane"]
    op.resume()
    assert len(freezer.calls) == 2


def test_pause_without_node_access_says_so() -> None:
    op = handle(FakeCore(pod("op-a", created=1.0)), freezer=None)
    with pytest.raises(InfraError, match="needs its node \\(kind\\)"):
        op.pause(1)


def test_operator_identity() -> None:
    op = handle(FakeCore())
    assert op.user_agent == "manager/"
    assert op.username == "system:serviceaccount:mo-system:mo-matrixone-operator"
    assert (op.target, op.version) == (f"image:{REF}", "v")
