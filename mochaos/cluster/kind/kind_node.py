"""Work done inside a kind node container (``docker exec``): audit-log files, freezing a container.

A kind node is a Docker container running containerd; its ``ctr`` CLI (the
one ``kind load`` itself uses) reaches the pods' containers in containerd's
``k8s.io`` namespace. ``ctr task pause`` freezes every process of a
container through the cgroup freezer and ``ctr task resume`` thaws them: a
real pause of a process, which kubelet does not notice (no probe, no restart).
"""

from __future__ import annotations

from mochaos.cluster.kind.docker_engine import Engine
from mochaos.errors import InfraError

CONTAINERD_NAMESPACE = "k8s.io"
"""containerd namespace of the containers kubelet runs (CRI)."""


def container_id(status_id: str) -> str:
    """The containerd id in a pod's ``containerStatuses[].containerID`` (``containerd://<id>``)."""
    runtime, sep, cid = status_id.partition("://")
    if not sep or runtime != "containerd" or not cid:
        raise InfraError(
            f"container id {status_id!r} is not a containerd one",
            hint="freezing a container needs kind's containerd nodes",
        )
    return cid


def _first_line(out: str, code: int) -> str:
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return lines[0][:200] if lines else f"exit {code}"


def _task(engine: Engine, node: str, verb: str, cid: str) -> None:
    code, out = engine.exec(node, ["ctr", "--namespace", CONTAINERD_NAMESPACE, "task", verb, cid])
    if code != 0:
        raise InfraError(
            f"`ctr task {verb} {cid[:12]}` in node {node} failed (exit {code}): "
            f"{_first_line(out, code)}",
            hint=f"check the container with `docker exec {node} ctr -n k8s.io task ls`",
        )


def freeze(engine: Engine, node: str, cid: str) -> None:
    """Freeze every process of container ``cid`` on ``node`` (cgroup freezer)."""
    _task(engine, node, "pause", cid)


def thaw(engine: Engine, node: str, cid: str) -> None:
    """Thaw a container frozen by :func:`freeze`."""
    _task(engine, node, "resume", cid)


def open_file(engine: Engine, node: str, path: str) -> str:
    """Make a root-owned file in the node readable by the host user; '' or why it failed."""
    code, out = engine.exec(node, ["chmod", "0644", path])
    return "" if code == 0 else _first_line(out, code)


def empty_directory(engine: Engine, node: str, path: str) -> str:
    """Delete everything under ``path`` in the node (as root); '' or why it failed.

    The apiserver writes its audit log as root into a host directory mounted in
    the node, so the host user cannot delete it; the node can.
    """
    code, out = engine.exec(node, ["sh", "-c", 'rm -rf -- "$1"/*', "sh", path])
    return "" if code == 0 else _first_line(out, code)
