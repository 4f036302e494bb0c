"""The Docker engine under kind: what ``docker info`` says, image pulls, exec in a node.

kind runs its nodes as containers of the local engine, so some of the
engine's properties decide how the kind path works, and are read from
``docker info`` (the engine API's ``/info``), never guessed from the engine's
version: the host's cgroup version (kubelet >= 1.35 needs ``failCgroupV1:
false`` on v1), the default runtime (whether it is mo-chaos's capability shim),
the image store (the containerd image store breaks ``kind load docker-image``
for multi-platform images), and the architecture (which single platform to
hand the nodes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mochaos.errors import InfraError
from mochaos.tooling.extras import import_extra
from mochaos.tooling.progress_callback import Progress

DOCKER_MINIMUM = (20, 10, 0)
"""Docker Engine 20.10: cgroup v2 and the ``--cgroupns`` kind's nodes use."""

CONTAINERD_SNAPSHOTTER = "io.containerd.snapshotter.v1"
"""``docker info`` DriverStatus ``driver-type`` of the containerd image store."""

_ARCHITECTURES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


@dataclass(frozen=True, slots=True)
class EngineInfo:
    """The facts of ``docker info`` the kind path depends on."""

    server_version: str
    cgroup_version: str
    driver: str
    containerd_store: bool
    architecture: str
    default_runtime: str = "runc"

    @property
    def platform(self) -> str:
        """The nodes' platform (``linux/amd64``…): kind nodes run natively on the engine."""
        arch = _ARCHITECTURES.get(self.architecture, self.architecture)
        return f"linux/{arch}"

    @property
    def image_store(self) -> str:
        """``containerd`` or ``classic (<graph driver>)``, for messages."""
        return "containerd" if self.containerd_store else f"classic ({self.driver})"


def parse_info(info: Mapping[str, Any]) -> EngineInfo:
    """Read :class:`EngineInfo` from the engine's ``/info`` answer (``docker info`` JSON).

    The containerd image store shows as a DriverStatus pair
    ``["driver-type", "io.containerd.snapshotter.v1"]`` (the Driver itself is a
    snapshotter name such as ``overlayfs`` or ``stargz``).
    """
    status = info.get("DriverStatus") or []
    containerd = any(
        len(pair) == 2 and pair[0] == "driver-type" and pair[1] == CONTAINERD_SNAPSHOTTER
        for pair in status
    )
    return EngineInfo(
        server_version=str(info.get("ServerVersion") or "0.0.0"),
        cgroup_version=str(info.get("CgroupVersion") or ""),
        driver=str(info.get("Driver") or "unknown"),
        containerd_store=containerd,
        architecture=str(info.get("Architecture") or "x86_64"),
        default_runtime=str(info.get("DefaultRuntime") or "runc"),
    )


def check_engine(info: EngineInfo) -> EngineInfo:
    """The engine's facts, or InfraError when kind's nodes cannot run on it (Docker < 20.10).

    A cgroup v1 host is accepted: the kind provider then tells the nodes' kubelet not to
    refuse it (:func:`mochaos.cluster.kind.host_facts.fail_cgroup_v1`).
    """
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", info.server_version)
    if m is None or (int(m[1]), int(m[2]), int(m[3])) < DOCKER_MINIMUM:
        raise InfraError(
            f"Docker Engine {info.server_version} is too old for kind's nodes",
            hint="install Docker Engine >= 20.10",
        )
    return info


class Engine(Protocol):
    """What the kind path needs from the Docker engine (tests pass a fake)."""

    def info(self) -> Mapping[str, Any]:
        """The engine's ``/info`` answer, as ``docker info --format '{{json .}}'`` prints it."""
        ...

    def has_image(self, ref: str) -> bool:
        """True when the image is in the engine's local store."""
        ...

    def pull(self, ref: str, *, progress: Progress) -> None:
        """Pull an image, reporting progress lines."""
        ...

    def exec(self, container: str, argv: Sequence[str]) -> tuple[int, str]:
        """Run a command in a running container: (exit status, output)."""
        ...


def pull_progress(ref: str, events: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """Turn Docker pull events into a few lines: one per finished layer, and the end."""
    done: set[str] = set()
    layers: set[str] = set()
    for ev in events:
        if "error" in ev:
            raise InfraError(f"pulling {ref} failed: {ev['error']}", hint="check the image name")
        layer, status = ev.get("id"), ev.get("status", "")
        if layer and status and not status.startswith("Pulling from"):
            layers.add(layer)
        if layer and status in ("Pull complete", "Already exists") and layer not in done:
            done.add(layer)
            yield f"pulling {ref}: {len(done)}/{len(layers)} layers done"
        elif status.startswith(("Status:", "Digest:")):
            yield f"pulling {ref}: {status}"


class DockerEngine:
    """The local Docker engine, reached through testcontainers' client (the ``[kind]`` extra)."""

    def __init__(self, *, environment: Mapping[str, str] | None = None) -> None:
        errors = import_extra("docker.errors", why="the Docker SDK drives kind's engine")
        clients = import_extra(
            "testcontainers.core.docker_client", why="testcontainers reaches the Docker engine"
        )
        kwargs = {"environment": dict(environment)} if environment is not None else {}
        try:
            self._client = clients.DockerClient(**kwargs).client
        except errors.DockerException as err:
            raise InfraError(
                f"Docker engine not reachable ({str(err).splitlines()[0][:160]})",
                hint="start Docker (kind and MinIO need it) or use --mochaos-cluster=local",
            ) from err

    def info(self) -> Mapping[str, Any]:
        """The engine's ``/info`` answer."""
        return dict(self._client.info())

    def has_image(self, ref: str) -> bool:
        """True when ``ref`` is in the local image store."""
        from docker.errors import ImageNotFound

        try:
            self._client.images.get(ref)
        except ImageNotFound:
            return False
        return True

    def pull(self, ref: str, *, progress: Progress) -> None:
        """Pull ``ref``, printing a line per finished layer."""
        from docker.utils import parse_repository_tag

        repo, tag = parse_repository_tag(ref)  # a digest (``@sha256:…``) is a tag here too
        events = self._client.api.pull(repo, tag=tag or "latest", stream=True, decode=True)
        for line in pull_progress(ref, events):
            progress(line)

    def exec(self, container: str, argv: Sequence[str]) -> tuple[int, str]:
        """Run ``argv`` in ``container``."""
        result = self._client.containers.get(container).exec_run(list(argv))
        return int(result.exit_code), result.output.decode(errors="replace")
