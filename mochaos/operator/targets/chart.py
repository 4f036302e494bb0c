"""``image:<repository>:<tag>``: the real operator image, installed with its Helm chart.

The chart owns the claim CRDs (it ships them as templates), so nothing of
ours is applied first, and a cluster that holds mo-chaos's own CRDs is refused
before Helm runs (see crds.check_chart_can_own_crds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from filelock import FileLock

from mochaos.crds import check_chart_can_own_crds
from mochaos.errors import UsageError
from mochaos.images.catalog import Builder, register
from mochaos.images.operator_images import manager_image, operator_ref
from mochaos.kube import Cluster
from mochaos.matrixone.storage import MINIO_IMAGE
from mochaos.matrixone.topology import DEFAULT_MO_IMAGE, Topology
from mochaos.operator.provenance import checkout as co
from mochaos.operator.provenance import git_source
from mochaos.operator.provenance.chart_source import checkout_chart
from mochaos.operator.provenance.helm import (
    KRUISE_IMAGE,
    ChartOptions,
    install_chart,
    operator_ready,
    wait_operator_ready,
)
from mochaos.operator.provenance.manager_build import build_manager
from mochaos.operator.targets.in_cluster import InClusterTarget, client_for, target_kwargs
from mochaos.paths import state_dir
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.image_ref import split_ref
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.runner import Runner, SubprocessRunner

INSTALL_LOCK_TIMEOUT = 1800.0


class ImageTarget(InClusterTarget):
    """``image:<repository>:<tag>``: install that image with the operator's Helm chart."""

    def __init__(
        self,
        *,
        ref: str,
        mo_image: str = DEFAULT_MO_IMAGE,
        mo_version: str | None = None,
        minio: str = "auto",
        topology: Topology | None = None,
        chart: ChartOptions | None = None,
        runner: Runner | None = None,
        search_path: str | None = None,
        state: Path | None = None,
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
            chart=chart or ChartOptions(),
            client_factory=client_factory,
            progress=progress,
            run_id=run_id,
            pulls=pulls,
            on_kind=on_kind,
        )
        self.ref = ref
        self.repository, self.tag = split_ref(ref)
        self.spec = f"image:{ref}"
        self.version = self.tag
        self.state = state or state_dir() / "operator"
        self.runner: Runner = runner or SubprocessRunner(log_path=self.state / "helm.log")
        self.search_path = search_path

    @property
    def images(self) -> tuple[str, ...]:
        """Images the cluster's nodes need; a provider's ``load_image`` takes each."""
        extra = (MINIO_IMAGE,) if self.minio == "in-cluster" else ()
        return (self.ref, self.mo_image, KRUISE_IMAGE, *extra)

    def _installed(self, api_client: Any) -> bool:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        try:
            dep = client.AppsV1Api(api_client).read_namespaced_deployment(
                self.chart.deployment, self.chart.namespace, _request_timeout=10
            )
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        images = [c.image for c in dep.spec.template.spec.containers]
        return self.ref in images and operator_ready(api_client, self.chart)[0]

    def install(self, cluster: Cluster) -> None:
        """Helm-install the chart with this image once per cluster; wait ready; start MinIO."""
        self.state.mkdir(parents=True, exist_ok=True)
        api = self.client_factory(cluster)
        lock = FileLock(str(self.state / f"install-{cluster.name}.lock"))
        with lock.acquire(timeout=INSTALL_LOCK_TIMEOUT):
            if self._installed(api):
                self.progress(f"operator {self.ref} already installed and ready")
            else:
                check_chart_can_own_crds(api)
                self.progress(f"installing matrixone-operator {self.ref} with Helm")
                install_chart(
                    cluster=cluster,
                    repository=self.repository,
                    tag=self.tag,
                    options=self.chart,
                    runner=self.runner,
                    helm_home=self.state / "helm",
                    search_path=self.search_path,
                )
                wait_operator_ready(api, self.chart)
        self._start_minio(cluster, api)


class SourceChartTarget(ImageTarget):
    """``source:<checkout or git URL>[@<rev>]`` on kind: the manager built from the checkout,
    packaged as an image (registered in :mod:`mochaos.images.catalog`, so the provider builds
    it when it loads it), installed with the checkout's own chart."""

    def __init__(self, *, value: str, **kwargs: Any) -> None:
        run_id = str(kwargs.get("run_id") or "")
        if git_source.is_url(value):
            url, ref = git_source.parse(value)
            found = git_source.identify(url, ref, run_id=run_id)
            self._checkout: Callable[[], co.Checkout] = partial(
                git_source.resolve, url, ref, run_id=run_id
            )
        else:
            path, rev = co.parse_source(value)
            found = co.identify(path, rev)
            self._checkout = partial(co.resolve, path, rev)
        super().__init__(ref=operator_ref(found.key), **kwargs)
        self.spec = f"source:{value}"
        self.version = f"matrixone-operator@{found.describe}"
        register(self.ref, Builder(self._build_image, pull_first=False,
                                   what=f"the operator image of {found.describe}"))  # fmt: skip

    def _build_image(self, docker: DockerCli, progress: Progress) -> None:
        manager_image(build_manager(self._checkout()), ref=self.ref, docker=docker,
                      progress=progress)  # fmt: skip

    def install(self, cluster: Cluster) -> None:
        """Install with the checkout's chart (its dependencies vendored), then as ``image:``."""
        if self.chart.chart_path is None:
            chart = checkout_chart(self._checkout())
            self.chart = replace(self.chart, chart_path=chart, dependency_update=False)
        super().install(cluster)


def from_source(value: str, options: dict[str, Any]) -> SourceChartTarget:
    """``source:<dir or git URL>[@<rev>]`` on kind: validated now, built when the provider
    loads it."""
    if options.get("cluster") == "existing":
        raise UsageError(
            "source: cannot run on an existing cluster: its nodes cannot pull an image built here",
            hint="push the operator's image to a registry its nodes reach and use image:<ref>",
        )
    return SourceChartTarget(value=value, **target_kwargs(options, chart=True))


def from_spec(value: str, options: dict[str, Any]) -> ImageTarget:
    """``image:<repository>:<tag>``."""
    if not value:
        raise UsageError("image: target needs a reference", hint="use image:<repo>:<tag>")
    return ImageTarget(ref=value, **target_kwargs(options, chart=True))
