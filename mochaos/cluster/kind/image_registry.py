"""A registry kind's nodes pull images through, as on the operator's CI or behind a
company's mirror (``--mochaos-registry``), instead of ``kind load``.

- ``local``: mo-chaos runs CNCF Distribution's registry (:mod:`mochaos.images.registry_image`)
  as a container on kind's Docker network, its port published on the host's loopback;
  every image the run needs is pushed there (``docker push`` to ``127.0.0.1:<port>``,
  which Docker allows without TLS) and containerd pulls it from the container's address
  on the network. The container is removed with the cluster.
- ``<host>:<port>`` or ``http(s)://<host>:<port>``: a registry or mirror the user already
  has; nothing is pushed, and an image it does not serve stops the run before the
  scenario, naming it.

Either way the node's containerd reads mirror definitions from
:data:`NODE_HOSTS_DIR` (``config_path``, set by the cluster's config at creation:
:func:`config_path_patch`), and for each registry in :data:`MIRRORED` a ``hosts.toml``
there sends pulls to the endpoint first, falling back to the upstream registry.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass

from mochaos.cluster.kind.docker_engine import Engine
from mochaos.errors import InfraError, UsageError
from mochaos.images.registry_image import PORT, ensure_image
from mochaos.runstate import register_container, unregister_container
from mochaos.tooling.docker_cli import DockerCli, daemon_reason
from mochaos.tooling.image_ref import split_ref
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.waiting import wait_for

NODE_HOSTS_DIR = "/etc/containerd/certs.d"
"""Where the node's containerd reads a ``hosts.toml`` per registry host."""
OWN_BUILDS = "mochaos.local"
"""The registry host in the names of images mo-chaos builds from a user's input (the
operator's image from a checkout, the node image): no real registry serves it."""
MIRRORED = ("docker.io", OWN_BUILDS)
"""The registries sent through the endpoint: the upstream images a run uses (OpenKruise's,
MatrixOne's, MinIO's, an ``image:`` target's) name Docker Hub by default, and the images
mo-chaos builds name :data:`OWN_BUILDS`."""
UPSTREAM_SERVER = {"docker.io": "https://registry-1.docker.io"}
MANIFEST_TYPES = ", ".join((
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
))  # fmt: skip
READY_TIMEOUT = 60.0


@dataclass(frozen=True)
class ImagePath:
    """Where a reference lives in a registry: its registry host, repository path and tag."""

    registry: str
    path: str
    tag: str

    @classmethod
    def of(cls, ref: str) -> ImagePath:
        """Docker's defaults: no host means ``docker.io``, no namespace ``library/``."""
        repository, tag = split_ref(ref)
        first, _, rest = repository.partition("/")
        if rest and ("." in first or ":" in first or first == "localhost"):
            return cls(first, rest, tag)
        return cls("docker.io", repository if rest else f"library/{repository}", tag)


def config_path_patch() -> str:
    """The containerd config patch (CRI plugin, config version 2) that makes it read
    :data:`NODE_HOSTS_DIR`; kind applies it when it creates the node."""
    return f'[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "{NODE_HOSTS_DIR}"\n'


def hosts_toml(registry: str, endpoint: str) -> str:
    """containerd's ``hosts.toml`` for ``registry``: pull and resolve through ``endpoint``
    first, the upstream server after it."""
    server = UPSTREAM_SERVER.get(registry, f"https://{registry}")
    return f'server = "{server}"\n\n[host."{endpoint}"]\n  capabilities = ["pull", "resolve"]\n'


def configure_node(engine: Engine, node: str, endpoint: str) -> None:
    """Point the node's containerd at ``endpoint`` for every registry in :data:`MIRRORED`
    (read at each pull: no restart). InfraError when the node was created without
    :func:`config_path_patch` (a kept cluster from a run without a registry)."""
    code, out = engine.exec(node, ["grep", "-q", f'config_path = "{NODE_HOSTS_DIR}"',
                                   "/etc/containerd/config.toml"])  # fmt: skip
    if code != 0:
        raise UsageError(
            f"kind node {node} was created without registry mirrors: its containerd does "
            f"not read {NODE_HOSTS_DIR}",
            hint=f"delete the kept cluster (`kind delete cluster --name "
            f"{node.removesuffix('-control-plane')}`) so this run creates it with them",
        )
    for registry in MIRRORED:
        folder = f"{NODE_HOSTS_DIR}/{registry}"
        code, out = engine.exec(node, [
            "sh", "-c", 'mkdir -p "$1" && printf "%s" "$2" > "$1/hosts.toml"', "sh",
            folder, hosts_toml(registry, endpoint),
        ])  # fmt: skip
        if code != 0:
            raise InfraError(
                f"could not write {folder}/hosts.toml in kind node {node}: {out.strip()[:200]}",
                hint=f"docker exec {node} ls {folder}",
            )


def serves(endpoint: str, ref: str, *, timeout: float = 15.0) -> bool:
    """Whether the registry at ``endpoint`` has ``ref`` (a HEAD of its manifest)."""
    image = ImagePath.of(ref)
    request = urllib.request.Request(
        f"{endpoint}/v2/{image.path}/manifests/{image.tag}", method="HEAD",
        headers={"Accept": MANIFEST_TYPES},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return 200 <= resp.status < 300
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return False
        raise InfraError(
            f"registry {endpoint} answered {err.code} for {ref}",
            hint="check the registry's address and that it allows anonymous pulls",
        ) from err
    except OSError as err:
        raise InfraError(
            f"registry {endpoint} cannot be reached: {err}",
            hint="check --mochaos-registry and that the registry runs",
        ) from err


class LocalRegistry:
    """CNCF Distribution's registry as a container on kind's Docker network (see the module
    docstring), one per kind cluster (``name``): the run's xdist workers share it as they
    share the cluster, and whoever deletes the cluster removes it (:meth:`down`)."""

    def __init__(
        self, docker: DockerCli, *, name: str, network: str, progress: Progress = say
    ) -> None:
        self.docker = docker
        self.name = name
        self.network = network
        self.progress = progress
        self.push_host = ""
        """``127.0.0.1:<port>``: where this host pushes."""
        self.endpoint = ""
        """``http://<address>:5000``: where the nodes pull from."""

    def up(self) -> LocalRegistry:
        """Start the container, or find it running; wait until it answers (a container this
        call created is removed again if it does not)."""
        state = self.docker.state(self.name)
        if state is not None and state.alive:
            self._address()
            return self
        if state is not None:
            self.down()
        image = ensure_image(self.docker, progress=self.progress)
        cid = self.docker.create([
            "--name", self.name, "--network", self.network, "--publish", f"127.0.0.1::{PORT}",
            "--label", "mochaos.io/role=registry", image,
        ])  # fmt: skip
        register_container(cid, self.docker.engine)
        try:
            started = self.docker.start(cid)
            if started.returncode != 0:
                raise InfraError(
                    f"the registry container did not start: {daemon_reason(started)}",
                    hint=f"check that the Docker network {self.network!r} exists",
                )
            self._address()
        except BaseException:
            self.down()
            raise
        self.progress(f"registry {self.name}: this host pushes to {self.push_host}, "
                      f"the nodes pull from {self.endpoint}")  # fmt: skip
        return self

    def _address(self) -> None:
        address = self.docker.address(self.name, self.network)
        if not address:
            raise InfraError(f"registry container {self.name} is not on Docker network "
                             f"{self.network!r}", hint=f"docker rm -f {self.name}")  # fmt: skip
        host, port = self.docker.published(self.name, PORT)
        self.push_host = f"{host}:{port}"
        self.endpoint = f"http://{address}:{PORT}"
        wait_for(self._answers, what=f"registry {self.name}", timeout=READY_TIMEOUT,
                 interval=0.3, hint=f"docker logs {self.name} shows why")  # fmt: skip

    def _answers(self) -> tuple[bool, str]:
        try:
            with urllib.request.urlopen(f"http://{self.push_host}/v2/", timeout=5) as resp:
                return resp.status == 200, f"HTTP {resp.status}"
        except OSError as err:
            return False, str(err)

    def push(self, ref: str) -> None:
        """Push ``ref`` (in the engine) under the path a node's pull of ``ref`` asks for."""
        image = ImagePath.of(ref)
        if image.registry not in MIRRORED:
            raise UsageError(
                f"{ref} names registry {image.registry}, which the nodes do not pull "
                f"through the local registry (only {', '.join(MIRRORED)})",
                hint="name the image without a registry host, or run without --mochaos-registry",
            )
        target = f"{self.push_host}/{image.path}:{image.tag}"
        self.docker.tag(ref, target)
        try:
            self.docker.push(target)
        finally:
            self.docker.untag(target)

    def down(self, *, keep: bool = False) -> None:
        """Remove the container, if any (``keep``: leave it running with a kept cluster,
        forgotten by the reaper)."""
        state = self.docker.state(self.name)
        if state is None:
            return
        cid = self.docker.inspect(self.name, "{{.Id}}")
        if not keep:
            self.docker.remove(cid)
        unregister_container(cid)
