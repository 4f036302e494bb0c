"""One test namespace's MatrixOne on the local cluster, for the real operator.

The namespace gets a LogSet and a DNSet (the shapes the operator's own e2e uses);
the operator turns them into OpenKruise workloads, the local cluster's kruise double
turns those into pods, and its MatrixOne double serves the namespace's HAKeeper, TN
lock service and CN query services on the namespace's own loopback address. The
scenario's CNPool then uses the template and dependencies returned here. Client
sessions on a CN (the platform agent's drain) go through the MatrixOne double.
"""

from __future__ import annotations

from pathlib import Path

from mochaos.cluster.commands import apply_objects, wait_for
from mochaos.cluster.minio import S3Store
from mochaos.doubles.matrixone import MatrixOneControl
from mochaos.kube import api_client
from mochaos.operator.image import Topology, matrixone_ready, render_topology
from mochaos.progress import phase
from mochaos.types import Cluster, PoolSpec

MO_IMAGE = "matrixorigin/matrixone:1.2.3"
"""The CN image written in the pool's template: the operator's webhooks want a semantic
version; kwok's nodes run no container, so the image is never pulled."""
READY_TIMEOUT = 120.0
UNUSED_STORE = S3Store(
    endpoint="http://127.0.0.1:1", bucket="mochaos", access_key="mochaos", secret_key="mochaos",
    where="not used: the MatrixOne double keeps no data",
)  # fmt: skip
TOPOLOGY = Topology(log_replicas=3)


class DoubleSessions:
    """Sessions on a CN as the MatrixOne double's query service reports them."""

    def __init__(self, control: MatrixOneControl, namespace: str) -> None:
        self._control = control
        self._namespace = namespace

    def set(self, pod: str, count: int) -> int | None:
        """Hold ``count`` sessions on ``pod`` (the double answers ShowProcessList with them)."""
        self._control.set_sessions(self._namespace, pod, count)
        return None


class LocalMatrixOne:
    """The MatrixOne of one namespace (see the module docstring)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self._cluster = cluster
        self._namespace = namespace
        self._control = MatrixOneControl.of(cluster)
        self.sessions = DoubleSessions(self._control, namespace)

    @property
    def hosts_file(self) -> Path:
        """The hosts file naming the namespace's MatrixOne services (for the manager)."""
        return self._control.hosts_file

    def prepare(self) -> PoolSpec:
        """Apply the LogSet and DNSet, wait until the operator reports both Ready."""
        docs = render_topology(
            namespace=self._namespace, run_id=self._run_id(), mo_image=MO_IMAGE,
            store=UNUSED_STORE, topology=TOPOLOGY,
        )  # fmt: skip
        (pool,) = [d for d in docs if d["kind"] == "CNPool"]
        with phase("topology: MatrixOne (LogSet, DNSet)"), api_client(
            self._cluster.kubeconfig, user_agent="mochaos/topology", context=self._cluster.context
        ) as api:  # fmt: skip
            apply_objects(api, [d for d in docs if d["kind"] != "CNPool"])
            wait_for(
                lambda: matrixone_ready(api, self._namespace, TOPOLOGY.pool),
                what=f"MatrixOne LogSet and DNSet {self._namespace}/{TOPOLOGY.pool}",
                timeout=READY_TIMEOUT, interval=0.5,
                hint=f"`kubectl -n {self._namespace} get logset,dnset,pods` and the operator log",
            )  # fmt: skip
        spec = pool["spec"]
        return PoolSpec(template=spec["template"], deps=spec["deps"], pod_labels=spec["podLabels"])

    def _run_id(self) -> str:
        from kubernetes import client

        from mochaos.types import RUN_ID_LABEL

        with api_client(self._cluster.kubeconfig, user_agent="mochaos/topology",
                        context=self._cluster.context) as api:  # fmt: skip
            ns = client.CoreV1Api(api).read_namespace(self._namespace)
        return (ns.metadata.labels or {}).get(RUN_ID_LABEL, "")
