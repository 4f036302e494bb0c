"""HAKeeper hung on kind's real MatrixOne: the namespace's log service pods frozen.

HAKeeper runs inside MatrixOne's log service, which the operator dials for every store
and CN-label call (mochaos.ctrl.mo_components). On kind the log service is a real
process in a real pod, so the fault that can be made honestly is the one a stalled node
or a long pause gives: every process of the namespace's log service pods frozen with
containerd's cgroup freezer (:class:`~mochaos.operator.runtime.pod_freezer.PodFreezer`),
thawed when the fault ends. The kernel still accepts the operator's connections, and no
answer comes: each call fails on the operator's own timeout ("hang"). The rest of
MatrixOne (its TN and CNs) waits on the same log service meanwhile, as it would.

A log service that refuses ("refuse": gone, its port closed) is not made here: killing it
would restart it under its StatefulSet, another fault. Such a scenario ends Inconclusive
with that reason, never passed. Implements mochaos.operator.target.MatrixOneFaults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mochaos.ctrl.mo_components import HAKEEPER
from mochaos.ctrl.objects import COMPONENT_LABEL
from mochaos.errors import Inconclusive, UsageError
from mochaos.operator.runtime.pod_freezer import Frozen, PodFreezer

LOG_SERVICE = "LogSet"
"""The ``matrixorigin.io/component`` of the log service's pods (the operator's label)."""


class FrozenHAKeeper:
    """HAKeeper made to hang in one namespace by freezing its log service pods."""

    components = (HAKEEPER,)

    def __init__(self, core: Callable[[], Any], namespace: str, freezer: PodFreezer) -> None:
        """``core``: the CoreV1Api to list the namespace's pods with."""
        self._core = core
        self._namespace = namespace
        self._freezer = freezer
        self._frozen: list[Frozen] = []

    def down(self, component: str, *, how: str) -> str:
        """Freeze the log service pods (``how`` hang); what was frozen. Inconclusive for
        ``refuse`` and when no log service pod runs."""
        if component != HAKEEPER:
            raise UsageError(
                f"kind's real MatrixOne cannot make {component} unreachable here: only "
                "HAKeeper, by freezing the log service",
                hint="fault the lock service or a query service on the local cluster",
            )
        if how != "hang":
            raise Inconclusive(
                "kind's real MatrixOne cannot refuse the operator's HAKeeper calls (that "
                "would kill the log service, which its StatefulSet restarts): only hang them"
            )
        pods = (
            self._core()
            .list_namespaced_pod(self._namespace, label_selector=f"{COMPONENT_LABEL}={LOG_SERVICE}")
            .items
        )
        running = [p for p in pods if p.status.phase == "Running"]
        if not running:
            raise Inconclusive(f"no log service pod runs in {self._namespace}: nothing to freeze")
        try:
            for pod in running:
                self._frozen.append(self._freezer.freeze(pod))
        except BaseException:
            self.up(component)
            raise
        return ", ".join(f"log service pod {p.metadata.name} frozen" for p in running)

    def up(self, component: str) -> None:
        """Thaw what :meth:`down` froze (nothing to do when nothing is frozen)."""
        frozen, self._frozen = self._frozen, []
        for one in frozen:
            self._freezer.thaw(one)
