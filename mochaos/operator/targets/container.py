"""``image:<ref>`` on the local cluster: the operator's image run with Docker, per namespace.

Everything but how the manager runs is ``binary:``'s
(:mod:`~mochaos.operator.targets.local_manager`): the operator's CRDs from
``--operator-crds`` (the image carries none), its webhooks served by one shared host — here
a container of the same image with webhooks on — and per test namespace a LogSet and DNSet
on the local cluster's doubles and a manager watching that namespace, here a container
(:mod:`~mochaos.operator.runtime.operator_container`). The image must be in the engine's
store or pullable; the manager is ``/manager`` in it, as the operator's chart
runs it, unless ``--operator-entrypoint`` names another path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mochaos.errors import UsageError
from mochaos.kube import Cluster
from mochaos.matrixone.local import LocalMatrixOne
from mochaos.operator.runtime.manager_launch import ManagerLaunch
from mochaos.operator.runtime.operator_container import (
    DEFAULT_ENTRYPOINT,
    ContainerHost,
    Mount,
    OperatorContainer,
    follow_output,
    manager_container,
    start_container,
)
from mochaos.operator.target import Waits
from mochaos.operator.targets.local_manager import READY_TIMEOUT, ManagerTarget, operator_crds_dir
from mochaos.operator.webhooks import admission as webhooks
from mochaos.operator.webhooks import host as webhook_host
from mochaos.paths import state_dir
from mochaos.progress import announce
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.image_ref import image_version


class ContainerTarget(ManagerTarget):
    """The operator image's manager, run as containers of the local Docker engine."""

    def __init__(
        self,
        *,
        ref: str,
        docker: DockerCli,
        crd_root: Path,
        entrypoint: str = DEFAULT_ENTRYPOINT,
        ready_timeout: float = READY_TIMEOUT,
        warm: int = 0,
        run_id: str = "",
        interposer: str = "on",
    ) -> None:
        super().__init__(
            spec=f"image:{ref}", version=image_version(ref), crd_root=crd_root,
            crd_source=f"operator CRDs from {crd_root}", ready_timeout=ready_timeout,
            warm=warm, run_id=run_id, interposer=interposer,
        )  # fmt: skip
        self.ref = ref
        self.docker = docker
        self.entrypoint = entrypoint
        self.image_id: str | None = None

    def _identity(self) -> str:
        """The image's id in the engine (pulled first when the engine lacks it)."""
        if self.image_id is None:
            found = self.docker.image_id(self.ref)
            if found is None:
                announce(f"pulling {self.ref} into the Docker engine")
                self.docker.pull(self.ref)
                found = self.docker.image_id(self.ref)
            if found is None:
                raise UsageError(f"image {self.ref} is not in the Docker engine after a pull",
                                 hint="check the reference")  # fmt: skip
            self.image_id = found
            self.version = f"{image_version(self.ref)}@{found.removeprefix('sha256:')[:12]}"
        return self.image_id

    @property
    def _manager_path(self) -> Path:
        return Path(self.entrypoint)

    def _spawn_host(
        self, cluster: Cluster, launch: ManagerLaunch, certs: Path, log: Path
    ) -> webhook_host.HostHandle:
        """The webhook host: a container of the image with webhooks on, our certificates
        mounted; its output followed into ``log``."""
        spec = manager_container(
            launch, cluster, image=self.ref, extra_args=webhooks.host_args(certs),
            extra_mounts=[Mount(certs, certs)], labels={"role": "webhook-host"},
        )  # fmt: skip
        cid = start_container(self.docker, spec, what="operator webhook host", reap=False)
        follow_output(self.docker, cid, log)
        return ContainerHost(cid, self.docker.engine)

    def _operator(
        self, cluster: Cluster, launch: ManagerLaunch, log_path: Path, env: LocalMatrixOne
    ) -> OperatorContainer:
        """The (not yet started) manager container of one namespace."""
        spec = manager_container(
            launch, cluster, image=self.ref, labels={"namespace": launch.namespace}
        )
        return OperatorContainer(
            docker=self.docker, spec=spec, target=self.spec, version=self.version,
            user_agent=Path(self.entrypoint).name, log_path=log_path,
            ready_timeout=self.ready_timeout, sessions=env.sessions, matrixone=env.faults,
            waits=Waits.of(env.timings),
        )  # fmt: skip


def from_spec(value: str, options: dict[str, Any]) -> ContainerTarget:
    """``image:<ref>`` on the local cluster, with ``--operator-crds <dir>`` and a reachable
    Docker engine (checked now: one line when there is none)."""
    if not value:
        raise UsageError("image: target needs a reference", hint="use image:<repo>:<tag>")
    crds = operator_crds_dir(
        options, f"image:{value} on the local cluster needs the operator's CRDs (an image "
        "carries none)",
    )  # fmt: skip
    try:
        docker = DockerCli.find(log_path=state_dir() / "operator" / "docker.log")
        docker.server_version()
    except UsageError as err:
        raise UsageError(
            f"image:{value} on the local cluster runs the image with Docker: {err.what}",
            hint=f"{err.hint}; or run its manager as --operator=binary:<path>",
        ) from None
    return ContainerTarget(
        ref=value, docker=docker, crd_root=crds,
        entrypoint=options.get("operator_entrypoint") or DEFAULT_ENTRYPOINT,
        ready_timeout=float(options.get("operator_ready_timeout") or READY_TIMEOUT),
        warm=int(options.get("warm_namespaces", 0)),
        run_id=str(options.get("run_id", "")),
        interposer=str(options.get("interposer") or "on"),
    )  # fmt: skip
