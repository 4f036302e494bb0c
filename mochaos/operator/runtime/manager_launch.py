"""Running the real operator manager on the local cluster (as a process, or in a container).

One manager per test namespace: its configuration directory (the operator reads a
mounted ConfigMap, one file per field) turns on the claim and pool controllers
(feature gates ``cnLabel`` and ``cnPool``) and ``onlyWatchReleasedNS`` with
``POD_NAMESPACE`` so it serves that namespace only; it gets a kubeconfig holding
only the run's context, free metrics and probe ports, and sees the in-cluster
service names of its namespace's MatrixOne (``<logset>-discovery.<ns>.svc``) through
a private ``/etc/hosts`` (see :mod:`mochaos.operator.runtime.private_hosts`). Webhooks are
served by one shared manager per cluster (:mod:`mochaos.operator.webhooks.admission`), so the
per-namespace managers run with ``ENABLE_WEBHOOKS=false``.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mochaos.kube import Cluster
from mochaos.kubeconfig import write_single_context
from mochaos.operator.runtime.private_hosts import hosts_wrapper

FEATURE_GATES = {"cnLabel": True, "cnPool": True}
"""The operator's gates the claim protocol needs (cnPool requires cnLabel). s3Reclaim stays
off: a disposable test namespace must not start bucket-cleaning Jobs while terminating."""

READY_CONTROLLERS = ("cn-claim-manager", "cn-claimset-manager", "cn-pool-manager")
"""The manager counts as ready once these controllers log "Starting workers"."""
READY_MESSAGE = "Starting workers"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config_dir(directory: Path, *, gates: dict[str, bool] | None = None) -> Path:
    """The operator's configuration directory: one file per field, as a mounted ConfigMap."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [f"{k}: {str(v).lower()}" for k, v in (gates or FEATURE_GATES).items()]
    (directory / "featureGates").write_text("\n".join(lines) + "\n")
    (directory / "onlyWatchReleasedNS").write_text("true\n")
    return directory


@dataclass
class ManagerLaunch:
    """Everything needed to start one manager for one namespace."""

    binary: Path
    """The manager executable (for a container: its path in the image)."""
    namespace: str
    workdir: Path
    hosts_file: Path | None
    webhooks: bool = False
    kubeconfig: Path | None = None
    """The operator's own kubeconfig (an interposer's, its only context); None: the
    cluster's."""
    extra_env: dict[str, str] = field(default_factory=dict)
    metrics_port: int = field(default_factory=free_port)
    probe_port: int = field(default_factory=free_port)

    def configure(self, cluster: Cluster) -> tuple[list[str], dict[str, str]]:
        """Write the config dir and kubeconfig under ``workdir``; return the manager's flags
        and the environment it reads (no program, no ``PATH``: the caller runs it)."""
        cfg = write_config_dir(self.workdir / "operator-cfg")
        kubeconfig = write_single_context(
            self.kubeconfig or cluster.kubeconfig,
            None if self.kubeconfig else cluster.context,
            self.workdir / "kubeconfig",
        )
        args = [
            f"--operator-cfg-directory={cfg}",
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.probe_port}",
        ]
        env = {
            "HOME": str(self.workdir),
            "KUBECONFIG": str(kubeconfig),
            "POD_NAMESPACE": self.namespace,
            "ENABLE_WEBHOOKS": "true" if self.webhooks else "false",
            **self.extra_env,
        }
        return args, env

    def prepare(self, cluster: Cluster) -> tuple[list[str], dict[str, str]]:
        """Write the config dir and kubeconfig; return the process's argv and environment."""
        args, manager_env = self.configure(cluster)
        argv = [str(self.binary), *args]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **manager_env}
        if self.hosts_file is not None:
            argv = [*hosts_wrapper(self.hosts_file), *argv]
        return argv, env


def ready_in_log(lines: Sequence[str], controllers: Sequence[str] = READY_CONTROLLERS) -> bool:
    """True once every controller in ``controllers`` logged "Starting workers"."""
    started: set[str] = set()
    for line in lines:
        if READY_MESSAGE not in line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        name = rec.get("controller") or rec.get("logger") or ""
        started.update(c for c in controllers if c == name or c in str(name))
    return started >= set(controllers)
