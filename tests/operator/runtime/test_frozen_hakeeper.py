"""HAKeeper hung on kind by freezing the log service pods: what is frozen, what is thawed,
and the faults it cannot make, which end Inconclusive or as bad input, never as a pass."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mochaos.ctrl.mo_components import HAKEEPER
from mochaos.errors import Inconclusive, InfraError, UsageError
from mochaos.operator.runtime.frozen_hakeeper import FrozenHAKeeper
from mochaos.operator.runtime.pod_freezer import Frozen


def _pod(name: str, phase: str = "Running") -> Any:
    return SimpleNamespace(metadata=SimpleNamespace(name=name), status=SimpleNamespace(phase=phase))


class FakeCore:
    """The CoreV1Api's pod list, as the apiserver would answer the label selector."""

    def __init__(self, pods: list[Any]) -> None:
        self.pods = pods
        self.asked: list[tuple[str, str]] = []

    def list_namespaced_pod(self, namespace: str, *, label_selector: str) -> Any:
        self.asked.append((namespace, label_selector))
        return SimpleNamespace(items=self.pods)


class FakeFreezer:
    """Records freezes and thaws; fails on the pods named in ``fail``."""

    def __init__(self, fail: tuple[str, ...] = ()) -> None:
        self.fail = fail
        self.frozen: list[str] = []

    def freeze(self, pod: Any) -> Frozen:
        if pod.metadata.name in self.fail:
            raise InfraError(f"cannot freeze {pod.metadata.name}")
        self.frozen.append(pod.metadata.name)
        return Frozen("node", (pod.metadata.name,))

    def thaw(self, frozen: Frozen) -> None:
        self.frozen.remove(frozen.container_ids[0])


def _faults(pods: list[Any], freezer: FakeFreezer) -> tuple[FrozenHAKeeper, FakeCore]:
    core = FakeCore(pods)
    return FrozenHAKeeper(lambda: core, "ns", freezer), core  # type: ignore[arg-type]


def test_a_hang_freezes_the_running_log_service_pods_until_up() -> None:
    freezer = FakeFreezer()
    faults, core = _faults([_pod("pool-log-0"), _pod("pool-log-1", "Pending")], freezer)
    where = faults.down(HAKEEPER, how="hang")
    assert core.asked == [("ns", "matrixorigin.io/component=LogSet")]
    assert where == "log service pod pool-log-0 frozen"
    assert freezer.frozen == ["pool-log-0"]
    faults.up(HAKEEPER)
    assert freezer.frozen == []
    faults.up(HAKEEPER)  # nothing left: nothing to do


def test_a_freeze_that_fails_partway_thaws_what_it_froze() -> None:
    freezer = FakeFreezer(fail=("pool-log-1",))
    faults, _ = _faults([_pod("pool-log-0"), _pod("pool-log-1")], freezer)
    with pytest.raises(InfraError):
        faults.down(HAKEEPER, how="hang")
    assert freezer.frozen == []


def test_a_refusal_or_no_log_service_is_inconclusive() -> None:
    freezer = FakeFreezer()
    faults, _ = _faults([_pod("pool-log-0")], freezer)
    with pytest.raises(Inconclusive, match="cannot refuse"):
        faults.down(HAKEEPER, how="refuse")
    empty, _ = _faults([_pod("pool-log-0", "Pending")], freezer)
    with pytest.raises(Inconclusive, match="no log service pod runs in ns"):
        empty.down(HAKEEPER, how="hang")
    assert freezer.frozen == []


def test_another_component_is_bad_input() -> None:
    faults, _ = _faults([_pod("pool-log-0")], FakeFreezer())
    with pytest.raises(UsageError, match="only HAKeeper"):
        faults.down("lockservice", how="hang")
