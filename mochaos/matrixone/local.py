"""One test namespace's MatrixOne on the local cluster, for the real operator manager.

The namespace gets a LogSet and a DNSet (the shapes the kind path uses); the operator
turns them into OpenKruise workloads, the local cluster's kruise-manager turns those into
kwok pods, and its MatrixOne double serves the namespace's HAKeeper, TN lock service and
CN query services on the namespace's own loopback address. The scenario's CNPool then
uses the template and dependencies returned here. Client sessions on a CN (the platform
agent's drain) and the faults that make a component unreachable go through the MatrixOne
double's control interface.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from mochaos.ctrl.mo_components import HAKEEPER, LOCK_SERVICE, QUERY
from mochaos.doubles import matrixone as mo_double
from mochaos.doubles import state_dir
from mochaos.doubles.matrixone import files as mo_files
from mochaos.doubles.matrixone.client import ControlClient, Refused
from mochaos.errors import Inconclusive, InfraError
from mochaos.kube import Cluster, api_client
from mochaos.matrixone.storage import S3Store
from mochaos.matrixone.topology import DEFAULT_MO_IMAGE, Topology, prepare_namespace
from mochaos.matrixone.waits import local
from mochaos.progress import phase

UNUSED_STORE = S3Store(
    endpoint="http://127.0.0.1:1", bucket="mochaos", access_key="mochaos", secret_key="mochaos",
    where="none: the MatrixOne double keeps no data",
)  # fmt: skip
"""The LogSet needs shared storage in its spec; the double never reads it."""
MO_VERSION = "1.2.3"
"""The CN image's version (kwok's nodes run no container: the image is never pulled)."""


class DoubleSessions:
    """Sessions on a CN as the MatrixOne double's query service reports them."""

    def __init__(self, control: ControlClient, namespace: str) -> None:
        self._control = control
        self._namespace = namespace
        self._held: set[str] = set()

    def hold(self, pod: str, n: int) -> int | None:
        """Keep ``n`` sessions on ``pod`` (the double answers ShowProcessList with them)."""
        self._control.set_sessions(self._namespace, pod, n)
        (self._held.add if n else self._held.discard)(pod)
        return None

    def close(self) -> None:
        """Release every session held."""
        for pod in sorted(self._held):
            self._control.set_sessions(self._namespace, pod, 0)
        self._held.clear()


class DoubleFaults:
    """The namespace's components made unreachable by the MatrixOne double, on the
    addresses the operator dials (implements mochaos.operator.target.MatrixOneFaults)."""

    components = (HAKEEPER, LOCK_SERVICE, QUERY)

    def __init__(self, control: ControlClient, namespace: str) -> None:
        self._control = control
        self._namespace = namespace

    def down(self, component: str, *, how: str) -> str:
        """Take ``component`` down; its addresses. Inconclusive when the double runs
        nothing there (no DN pod, no CN store for the pod)."""
        try:
            fault = self._control.set_fault(self._namespace, component, down=True, how=how)
        except Refused as err:
            if err.status == 404:
                what = f"{component} could not be made unreachable: {err.what}"
                raise Inconclusive(what) from err
            raise
        return ", ".join(fault.addresses)

    def up(self, component: str) -> None:
        """Bring ``component`` back (the double answers an up whatever was down)."""
        self._control.set_fault(self._namespace, component, down=False)


class LocalMatrixOne:
    """The MatrixOne of one namespace (see the module docstring)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self._cluster = cluster
        self._namespace = namespace
        if cluster.state_dir is None:
            raise InfraError(
                f"cluster {cluster.name} ({cluster.provider}) has no MatrixOne double",
                hint="real-manager targets run on the local cluster",
            )
        self._state = state_dir(cluster.state_dir, mo_double.NAME)
        self._control = ControlClient.from_state_dir(self._state)
        self.sessions = DoubleSessions(self._control, namespace)
        self.faults = DoubleFaults(self._control, namespace)
        self.timings = local()

    @property
    def hosts_file(self) -> Path:
        """The hosts file naming the namespaces' MatrixOne services (for the manager)."""
        return self._state / mo_files.HOSTS

    def prepare(self, cancel: threading.Event | None = None) -> dict[str, Any]:
        """Apply the LogSet and DNSet, wait until the operator reports both Ready (InfraError
        once ``cancel`` is set); the rendered CNPool whose template the scenario's pool uses."""
        with phase("topology: MatrixOne (LogSet, DNSet)"), api_client(
            self._cluster.kubeconfig, user_agent="mochaos/topology", context=self._cluster.context
        ) as api:  # fmt: skip
            return prepare_namespace(
                api, namespace=self._namespace, mo_image=DEFAULT_MO_IMAGE,
                mo_version=MO_VERSION, store=UNUSED_STORE, topology=Topology(),
                timings=self.timings, interval=0.5, cancel=cancel,
            )  # fmt: skip
