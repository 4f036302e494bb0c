"""What this host lacks for kind, read from the kernel, and the workaround each gap needs.

Two gaps are known: a capability bounding set without capabilities Docker
grants privileged containers (kind's nodes), and a cgroup v1 hierarchy (kubelet
>= 1.35 refuses it by default). Each is detected here, never assumed: a host
with every capability and cgroup v2 gets no workaround at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mochaos.cluster.kind.runtime_shim import bounding_set, missing_capabilities

OOM_CAPABILITY = "CAP_SYS_RESOURCE"
"""Lowering a process's ``oom_score_adj`` needs it; containerd does that for every pod."""


@dataclass(frozen=True, slots=True)
class Workaround:
    """One setting applied because of one detected gap, and why (printed when applied)."""

    name: str
    why: str


@dataclass(frozen=True, slots=True)
class HostFacts:
    """The host's capability bounding set and cgroup version, as the kernel reports them."""

    missing_caps: tuple[str, ...]
    cgroup_version: str

    @classmethod
    def read(cls, proc: Path = Path("/proc/self/status"), cgroup: Path = Path("/sys/fs/cgroup")):
        """The facts of the machine we run on."""
        missing = tuple(missing_capabilities(bounding_set(proc.read_text())))
        unified = (cgroup / "cgroup.controllers").exists()
        return cls(missing_caps=missing, cgroup_version="2" if unified else "1")

    def runtime_shim(self) -> Workaround | None:
        """dockerd must run containers through the shim that drops the missing capabilities."""
        if not self.missing_caps:
            return None
        caps = ", ".join(self.missing_caps)
        return Workaround(
            "runtime shim",
            f"the capability bounding set lacks {caps}: runc cannot start privileged "
            "containers (kind's nodes) asking for it; the shim drops it from their specs",
        )

    def restrict_oom_score_adj(self) -> Workaround | None:
        """containerd in the node must not lower pods' ``oom_score_adj``."""
        if OOM_CAPABILITY not in self.missing_caps:
            return None
        return Workaround(
            "containerd restrict_oom_score_adj",
            f"lowering oom_score_adj needs {OOM_CAPABILITY}, which the nodes cannot have: "
            "pod sandboxes would fail to start",
        )


def fail_cgroup_v1(cgroup_version: str) -> Workaround | None:
    """kubelet's ``failCgroupV1: false``, needed when the engine's host runs cgroup v1."""
    if cgroup_version != "1":
        return None
    return Workaround(
        "kubelet failCgroupV1: false",
        "the Docker host runs cgroup v1, which kubelet >= 1.35 refuses unless told not to",
    )
