"""What every part of the local provider shares: one named cluster, its folder and lock.

:class:`LocalClusterBase` holds the cluster's name, node count and apiserver port (from the
arguments or the environment: :data:`NAME_ENV`, :data:`~mochaos.cluster.local.ports.PORT_ENV`),
its folders under the state dir, its supervision and the doubles it was given; the paths every
part reads, the provider's lock, and the :class:`~mochaos.kube.Cluster` it hands out. The parts
of :class:`~mochaos.cluster.local.local_provider.LocalProvider` (lifecycle, kwokctl, components,
provisions) build on it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from filelock import FileLock

from mochaos.binaries import control_plane
from mochaos.cluster.local import doubles_host, leases
from mochaos.cluster.local.ports import port_from_env
from mochaos.cluster.local.supervisor import KUBECONFIG_FILE, Supervision
from mochaos.doubles import DoubleSpec
from mochaos.kube import Cluster
from mochaos.paths import state_dir

DEFAULT_NAME = "mochaos"
NAME_ENV = "MOCHAOS_CLUSTER_NAME"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
              leases.KWOK_CONTROLLER)  # fmt: skip
DEFAULT_NODES = 3
READY_TIMEOUT = 60.0
LOCK_TIMEOUT = 3600.0


class LocalClusterBase:
    """One named local cluster: its settings, folders, supervision and lock (see the module
    docstring)."""

    name = "local"

    def __init__(
        self,
        *,
        name: str | None = None,
        nodes: int = DEFAULT_NODES,
        apiserver_port: int | None = None,
        doubles: Sequence[DoubleSpec] | None = None,
    ) -> None:
        """``name`` defaults to $MOCHAOS_CLUSTER_NAME or ``mochaos``; ``apiserver_port`` to
        $MOCHAOS_APISERVER_PORT or a free port kwokctl picks; ``doubles`` are run on every
        start besides what targets asked for (:meth:`provide`)."""
        self.cluster_name = name or os.environ.get(NAME_ENV) or DEFAULT_NAME
        self.nodes = nodes
        self.apiserver_port = apiserver_port if apiserver_port is not None else port_from_env()
        self._explicit: tuple[DoubleSpec, ...] = tuple(doubles or ())
        doubles_host.check_registry(self._explicit, COMPONENTS)
        self.workdir = state_dir() / "kwok"
        self.cluster_dir = self.workdir / "clusters" / self.cluster_name
        self.supervision = Supervision(self.cluster_dir)

    # -- paths -------------------------------------------------------------

    def kubeconfig_path(self) -> Path:
        """The cluster's kubeconfig (exists once the cluster was created)."""
        return self.cluster_dir / KUBECONFIG_FILE

    def audit_log(self) -> Path | None:
        """The apiserver audit log (JSON lines of audit.k8s.io/v1 Events)."""
        path = self.cluster_dir / "logs" / "audit.log"
        return path if path.exists() else None

    def events_log(self) -> Path:
        """The cluster's events file: one JSON line per restart by the supervisor."""
        return self.supervision.events_file

    def _lock(self) -> FileLock:
        self.workdir.mkdir(parents=True, exist_ok=True)
        # Long enough for a cold build by another process (xdist workers share one cluster).
        return FileLock(str(self.workdir / f"{self.cluster_name}.lock"), timeout=LOCK_TIMEOUT)

    def _cluster(self) -> Cluster:
        return Cluster(
            name=self.cluster_name,
            provider=self.name,
            kubeconfig=self.kubeconfig_path(),
            version=control_plane.KUBERNETES_VERSION,
            audit_log=self.cluster_dir / "logs" / "audit.log",
            state_dir=self.cluster_dir,
            events_log=self.events_log(),
        )
