"""Freeze and thaw a pod's processes on its kind node: a real pause of an in-cluster operator.

Scaling a Deployment to 0 and back is a restart (a new process, a leader-lease
wait, a full relist); a paused process instead keeps its memory, its caches
and its lease, and resumes where it stopped, as a long GC pause or a stalled
node would. On kind the node is a Docker container, so every container of
the pod is frozen with containerd's cgroup freezer (see cluster/kind/kind_node.py).
A pause longer than the operator's lease renew deadline (10 s,
controller-runtime's default) ends, on thaw, with the manager losing its
lease and exiting, as a real frozen operator would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mochaos.cluster.kind import kind_node
from mochaos.cluster.kind.docker_engine import Engine
from mochaos.errors import InfraError


@dataclass(frozen=True, slots=True)
class Frozen:
    """The containers one :meth:`PodFreezer.freeze` froze."""

    node: str
    container_ids: tuple[str, ...]


class PodFreezer:
    """Freezes pods of a kind cluster through ``docker exec`` into their node."""

    def __init__(self, engine: Callable[[], Engine]) -> None:
        self._engine = engine

    def freeze(self, pod: Any) -> Frozen:
        """Freeze every running container of ``pod`` (a V1Pod); what to thaw later."""
        node = pod.spec.node_name
        statuses = pod.status.container_statuses or []
        ids = tuple(kind_node.container_id(s.container_id) for s in statuses if s.container_id)
        if not node or not ids:
            raise InfraError(
                f"pod {pod.metadata.name} has no running container to freeze",
                hint="the operator must be Running before it can be paused",
            )
        engine = self._engine()
        done: list[str] = []
        try:
            for cid in ids:
                kind_node.freeze(engine, node, cid)
                done.append(cid)
        except InfraError:
            self.thaw(Frozen(node, tuple(done)))
            raise
        return Frozen(node, ids)

    def thaw(self, frozen: Frozen) -> None:
        """Thaw what :meth:`freeze` froze."""
        engine = self._engine()
        for cid in frozen.container_ids:
            kind_node.thaw(engine, frozen.node, cid)
