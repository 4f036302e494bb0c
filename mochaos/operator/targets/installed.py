"""``installed``: an operator already running in the cluster, found by its chart's labels."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mochaos.errors import InfraError, UsageError
from mochaos.kube import Cluster
from mochaos.matrixone.topology import DEFAULT_MO_IMAGE, Topology
from mochaos.operator.provenance.helm import CHART_NAME, ChartOptions, wait_operator_ready
from mochaos.operator.targets.in_cluster import InClusterTarget, client_for, target_kwargs
from mochaos.tooling.image_ref import image_version
from mochaos.tooling.progress_callback import Progress, say


class InstalledTarget(InClusterTarget):
    """``installed``: use the matrixone-operator Deployment the cluster already runs."""

    def __init__(
        self,
        *,
        mo_image: str = DEFAULT_MO_IMAGE,
        mo_version: str | None = None,
        minio: str = "auto",
        topology: Topology | None = None,
        client_factory: Callable[[Cluster], Any] = client_for,
        progress: Progress = say,
        run_id: str = "mochaos",
        pulls: bool = False,
        on_kind: bool = False,
    ) -> None:
        super().__init__(
            mo_image=mo_image,
            mo_version=mo_version,
            minio=minio,
            topology=topology or Topology(),
            chart=ChartOptions(),
            client_factory=client_factory,
            progress=progress,
            run_id=run_id,
            pulls=pulls,
            on_kind=on_kind,
        )
        self.spec = "installed"
        self.version = "unknown"

    def install(self, cluster: Cluster) -> None:
        """Find the operator Deployment, check it is ready, read its version; start MinIO."""
        from kubernetes import client

        api = self.client_factory(cluster)
        found = (
            client.AppsV1Api(api)
            .list_deployment_for_all_namespaces(
                label_selector=f"app.kubernetes.io/name={CHART_NAME}", _request_timeout=10
            )
            .items
        )
        if not found:
            raise InfraError(
                "no matrixone-operator Deployment in the cluster",
                hint="install it, or use --operator=image:<ref> to install one with Helm",
            )
        dep = found[0]
        labels = dep.metadata.labels or {}
        self.chart = ChartOptions(
            release=labels.get("app.kubernetes.io/instance", self.chart.release),
            namespace=dep.metadata.namespace,
            deployment_name=dep.metadata.name,
        )
        self.version = image_version(dep.spec.template.spec.containers[0].image)
        wait_operator_ready(api, self.chart)
        self._start_minio(cluster, api)


def from_spec(value: str, options: dict[str, Any]) -> InstalledTarget:
    """``installed``."""
    if value:
        raise UsageError(f"installed takes no value (got {value!r})", hint="use installed")
    return InstalledTarget(**target_kwargs(options, chart=False))
