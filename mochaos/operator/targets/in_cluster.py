"""What the targets whose operator runs in the cluster share (``image:`` and ``installed``).

MinIO once per cluster, each test namespace's MatrixOne (LogSet, DNSet, the
pool spec), and a handle per namespace with its SQL sessions and, on kind, a
pod freezer. Subclasses say how the operator gets installed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from mochaos.cluster.environment import Environment
from mochaos.cluster.kind.docker_engine import DockerEngine
from mochaos.errors import UsageError
from mochaos.kube import Cluster, new_api_client
from mochaos.matrixone.sessions import SqlSessions, port_forward
from mochaos.matrixone.storage import DockerMinio, InClusterMinio, MinioStore, S3Store
from mochaos.matrixone.topology import Topology, prepare_namespace
from mochaos.matrixone.version import mo_semantic_version
from mochaos.matrixone.waits import Timings
from mochaos.operator.provenance.helm import ChartOptions
from mochaos.operator.runtime.frozen_hakeeper import FrozenHAKeeper
from mochaos.operator.runtime.in_cluster_operator import InClusterOperator
from mochaos.operator.runtime.pod_freezer import PodFreezer
from mochaos.operator.target import PoolSpec
from mochaos.tooling.image_ref import split_ref
from mochaos.tooling.progress_callback import Progress

MINIO_MODES = ("auto", "docker", "in-cluster")


def client_for(cluster: Cluster) -> Any:
    """A new ApiClient on the cluster (each caller gets its own)."""
    return new_api_client(
        cluster.kubeconfig, user_agent="mochaos/operator", context=cluster.context
    )


class InClusterTarget:
    """The shared part of ``image:`` and ``installed``; :meth:`install` is the subclass's."""

    spec: str
    version: str
    crds = "operator"
    time_scaled = False
    matrixone_components: tuple[str, ...] = ()
    """The faults the cluster's real MatrixOne can take: on kind HAKeeper, hung by freezing
    the log service (:mod:`mochaos.operator.runtime.frozen_hakeeper`); elsewhere none."""
    environment = Environment()
    """On kind or an existing cluster the operator's chart (or the cluster) brings OpenKruise."""

    def __init__(
        self,
        *,
        mo_image: str,
        mo_version: str | None,
        minio: str,
        topology: Topology,
        chart: ChartOptions,
        client_factory: Callable[[Cluster], Any],
        progress: Progress,
        run_id: str,
        timings: Timings | None = None,
        pulls: bool = False,
        on_kind: bool = False,
    ) -> None:
        """``pulls``: kind's nodes pull the images through a registry (``--mochaos-registry``)
        instead of having them loaded, so the waits include a pull. ``on_kind``: the run's
        cluster is kind (``--mochaos-cluster``), whose nodes can freeze a pod."""
        if minio not in MINIO_MODES:
            raise UsageError(f"unknown MinIO mode {minio!r}", hint="use auto, docker or in-cluster")
        split_ref(mo_image)
        self.mo_image = mo_image
        self.mo_version = mo_semantic_version(mo_image, mo_version)
        self.minio = minio
        self.topology = topology
        self.chart = chart
        self.client_factory = client_factory
        self.progress = progress
        self.run_id = run_id
        self.timings = timings or Timings()
        self.pulls = pulls
        self.matrixone_components = FrozenHAKeeper.components if on_kind else ()
        self._store: S3Store | None = None
        self._minio: MinioStore | None = None

    def _start_minio(self, cluster: Cluster, api_client: Any) -> S3Store:
        if self._store is None:
            docker = self.minio == "docker" or (self.minio == "auto" and cluster.provider == "kind")
            if docker:
                self._minio = DockerMinio(progress=self.progress)
            else:
                self._minio = InClusterMinio(
                    api_client=api_client, run_id=self.run_id, progress=self.progress
                )
            self._store = self._minio.up()
        return self._store

    def timings_on(self, cluster: Cluster) -> Timings:
        """The waits on ``cluster``: kind's nodes hold every image before the install
        (the provider loaded them), so nothing is pulled there, unless they pull through a
        registry."""
        if cluster.provider == "kind" and not self.pulls:
            return replace(self.timings, image_pull=0.0)
        return self.timings

    def close(self) -> None:
        """Stop the MinIO this target started (the in-cluster one stays with the cluster)."""
        if isinstance(self._minio, DockerMinio):
            self._minio.down()
        self._minio, self._store = None, None

    def install(self, cluster: Cluster) -> None:
        """Make the operator ready and MinIO available (subclasses)."""
        raise NotImplementedError

    def start(self, cluster: Cluster, namespace: str, log_dir: Path) -> InClusterOperator:
        """Give ``namespace`` its MatrixOne base (see ``prepare_namespace``); the handle."""
        if self._store is None:
            self.install(cluster)
        assert self._store is not None
        timings = self.timings_on(cluster)
        api = self.client_factory(cluster)
        pool = prepare_namespace(
            api,
            namespace=namespace,
            mo_image=self.mo_image,
            mo_version=self.mo_version,
            store=self._store,
            topology=self.topology,
            timings=timings,
            progress=self.progress,
        )
        log_dir.mkdir(parents=True, exist_ok=True)
        # Port-forwards swap their client's request method: they get a client of their own.
        sessions = SqlSessions(
            port_forward(self.client_factory(cluster), namespace), progress=self.progress
        )
        freezer = PodFreezer(DockerEngine) if cluster.provider == "kind" else None
        matrixone = None
        if freezer is not None and self.matrixone_components:
            matrixone = FrozenHAKeeper(lambda: _core_api(api), namespace, freezer)
        return InClusterOperator(
            target=self.spec,
            version=self.version,
            api_client=api,
            namespace=self.chart.namespace,
            deployment=self.chart.deployment,
            selector=self.chart.selector,
            log_path=log_dir / "operator.log",
            progress=self.progress,
            pool_spec=PoolSpec.of(pool),
            sessions=sessions,
            freezer=freezer,
            timings=timings,
            matrixone=matrixone,
        )


def _core_api(api: Any) -> Any:
    from kubernetes import client  # lazy: the plugin loads targets; kubernetes is heavy

    return client.CoreV1Api(api)


def target_kwargs(options: dict[str, Any], *, chart: bool) -> dict[str, Any]:
    """Keyword arguments for the in-cluster targets from the run's settings (unset: default)."""
    kwargs: dict[str, Any] = {
        k: options[k]
        for k in ("mo_image", "mo_version", "minio", "run_id")
        if options.get(k) is not None
    }
    kwargs["pulls"] = options.get("registry") is not None
    kwargs["on_kind"] = options.get("cluster") == "kind"
    if chart:
        fields = {"repo_url": "chart_repo", "version": "chart_version", "chart_path": "chart_path"}
        chosen = {f: options[o] for f, o in fields.items() if options.get(o) is not None}
        if chosen:
            kwargs["chart"] = ChartOptions(**chosen)
    return kwargs
