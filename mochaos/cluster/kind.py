"""The kind provider: a real Kubernetes in Docker, for qualifying an operator image.

``kind create cluster`` from a generated config (pinned node image, apiserver
audit log through kubeadm patches and host mounts), reused when a healthy
cluster of the same name exists, ``kind load docker-image`` for the images
the run needs (pulled first through the Docker engine, with progress), and
``kind delete cluster`` on teardown unless the cluster is to be kept.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
from filelock import FileLock

from mochaos.cluster.commands import (
    MANIFESTS,
    Progress,
    Runner,
    SubprocessRunner,
    Tool,
    check_version,
    require_tool,
    say,
    wait_for,
)
from mochaos.errors import InfraError, UsageError
from mochaos.kube import new_api_client
from mochaos.paths import state_dir
from mochaos.types import Cluster

KIND_VERSION = "v0.33.0"
NODE_IMAGE = (
    "kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed"
)
"""Built for kind v0.33.0 (listed in that release's notes); kind runs only images built for it."""

KIND_NETWORK = "kind"
"""The Docker network kind puts its nodes on; MinIO joins it to be reachable from pods."""

DEFAULT_NAME = "mochaos"
CREATE_WAIT = 300
READY_TIMEOUT = 120.0

KIND = Tool(
    name="kind",
    minimum=(0, 33, 0),
    why=f"the pinned node image is built for kind {KIND_VERSION}",
    install=f"`go install sigs.k8s.io/kind@{KIND_VERSION}`",
    version_args=("version",),
)
DOCKER_CLI = Tool(
    name="docker",
    minimum=(20, 10, 0),
    why="kind drives the docker CLI",
    install="Docker Engine >= 20.10 (e.g. `apt-get install docker.io`)",
    version_args=("version", "--format", "{{.Client.Version}}"),
)
DOCKER_MINIMUM = (20, 10, 0)
"""Docker Engine 20.10 is the first with cgroup v2, which Kubernetes >= 1.35 node images need."""

# Inside the node container: where the policy is mounted and where the log is written.
NODE_POLICY_DIR = "/etc/kubernetes/policies"
NODE_LOG_DIR = "/var/log/kubernetes/audit"
AUDIT_LOG_NAME = "audit.log"
AUDIT_LOG_MAX_MB = 500

AUDIT_POLICY = MANIFESTS / "kind" / "audit-policy.yaml"


@dataclass(frozen=True, slots=True)
class PortMapping:
    """A node port published on the host (kind ``extraPortMappings``)."""

    container_port: int
    host_port: int
    listen_address: str = "127.0.0.1"
    protocol: str = "TCP"


def node_kubernetes_version(node_image: str) -> tuple[int, int, int]:
    """The Kubernetes version in a node image tag (``kindest/node:v1.36.4@sha256:…``)."""
    m = re.search(r":v(\d+)\.(\d+)\.(\d+)(?:@|$)", node_image)
    if m is None:
        raise UsageError(
            f"cannot tell the Kubernetes version of node image {node_image!r}",
            hint="use an image tagged vX.Y.Z, e.g. " + NODE_IMAGE,
        )
    return int(m[1]), int(m[2]), int(m[3])


def _audit_patch(kube_version: tuple[int, int, int]) -> str:
    """The kubeadm ClusterConfiguration patch that turns on the audit log.

    kind v0.33 generates kubeadm v1beta4 for Kubernetes >= 1.36, where
    ``extraArgs`` is a list of name/value pairs, and v1beta3 (a plain map)
    before that; the patch names its apiVersion so kind applies it as written.
    """
    args = {
        "audit-policy-file": f"{NODE_POLICY_DIR}/audit-policy.yaml",
        "audit-log-path": f"{NODE_LOG_DIR}/{AUDIT_LOG_NAME}",
        "audit-log-maxsize": str(AUDIT_LOG_MAX_MB),
        "audit-log-maxbackup": "1",
    }
    v1beta4 = kube_version >= (1, 36, 0)
    volumes = [
        {
            "name": "audit-policies",
            "hostPath": NODE_POLICY_DIR,
            "mountPath": NODE_POLICY_DIR,
            "readOnly": True,
            "pathType": "DirectoryOrCreate",
        },
        {
            "name": "audit-logs",
            "hostPath": NODE_LOG_DIR,
            "mountPath": NODE_LOG_DIR,
            "readOnly": False,
            "pathType": "DirectoryOrCreate",
        },
    ]
    patch = {
        "kind": "ClusterConfiguration",
        "apiVersion": "kubeadm.k8s.io/v1beta4" if v1beta4 else "kubeadm.k8s.io/v1beta3",
        "apiServer": {
            "extraArgs": [{"name": k, "value": v} for k, v in args.items()] if v1beta4 else args,
            "extraVolumes": volumes,
        },
    }
    return yaml.safe_dump(patch, sort_keys=False)


def kind_config(
    *,
    name: str,
    node_image: str,
    audit_dir: Path,
    workers: int = 0,
    port_mappings: Sequence[PortMapping] = (),
) -> dict[str, Any]:
    """The kind Cluster config (kind.x-k8s.io/v1alpha4) for one mo-chaos cluster.

    ``audit_dir`` on the host holds ``policy/audit-policy.yaml`` and receives
    ``log/audit.log``; both are mounted into the control-plane node and from
    there into the apiserver's static pod.
    """
    control_plane: dict[str, Any] = {
        "role": "control-plane",
        "image": node_image,
        "extraMounts": [
            {
                "hostPath": str(audit_dir / "policy"),
                "containerPath": NODE_POLICY_DIR,
                "readOnly": True,
            },
            {"hostPath": str(audit_dir / "log"), "containerPath": NODE_LOG_DIR},
        ],
        "kubeadmConfigPatches": [_audit_patch(node_kubernetes_version(node_image))],
    }
    if port_mappings:
        control_plane["extraPortMappings"] = [
            {
                "containerPort": p.container_port,
                "hostPort": p.host_port,
                "listenAddress": p.listen_address,
                "protocol": p.protocol,
            }
            for p in port_mappings
        ]
    nodes = [control_plane] + [{"role": "worker", "image": node_image} for _ in range(workers)]
    return {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": name,
        "nodes": nodes,
    }


# --------------------------------------------------------------------------
# The Docker engine, through testcontainers
# --------------------------------------------------------------------------


class Engine(Protocol):
    """What the kind path needs from the Docker engine (tests pass a fake)."""

    def server_version(self) -> str:
        """The engine's version, e.g. ``28.2.2``."""
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


def split_ref(ref: str) -> tuple[str, str]:
    """(repository, tag) of an image reference; the tag defaults to ``latest``."""
    if "@" in ref:
        raise UsageError(
            f"image reference {ref!r} uses a digest",
            hint="name the image by tag (repository:tag); kind and the chart load tags",
        )
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1 :]
    return ref, "latest"


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
    """The local Docker engine, reached through testcontainers' client."""

    def __init__(self, *, environment: Mapping[str, str] | None = None) -> None:
        from docker.errors import DockerException
        from testcontainers.core.docker_client import DockerClient

        kwargs = {"environment": dict(environment)} if environment is not None else {}
        try:
            self._client = DockerClient(**kwargs).client
        except DockerException as err:
            raise InfraError(
                f"Docker engine not reachable ({str(err).splitlines()[0][:160]})",
                hint="start Docker (kind and MinIO need it) or use --mochaos-cluster=local",
            ) from err

    def server_version(self) -> str:
        """The engine's version string."""
        return str(self._client.version().get("Version", "0.0.0"))

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
        repo, tag = split_ref(ref)
        events = self._client.api.pull(repo, tag=tag, stream=True, decode=True)
        for line in pull_progress(ref, events):
            progress(line)

    def exec(self, container: str, argv: Sequence[str]) -> tuple[int, str]:
        """Run ``argv`` in ``container``."""
        result = self._client.containers.get(container).exec_run(list(argv))
        return int(result.exit_code), result.output.decode(errors="replace")


def check_engine(engine: Engine) -> str:
    """The engine's version; InfraError when older than Docker 20.10."""
    version = engine.server_version()
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    if m is None or (int(m[1]), int(m[2]), int(m[3])) < DOCKER_MINIMUM:
        raise InfraError(
            f"Docker Engine {version} is too old (Kubernetes >= 1.35 nodes need cgroup v2)",
            hint="install Docker Engine >= 20.10",
        )
    return version


# --------------------------------------------------------------------------
# The provider
# --------------------------------------------------------------------------


class KindProvider:
    """Creates (or reuses), loads images into, and deletes one kind cluster."""

    name = "kind"

    def __init__(
        self,
        *,
        name: str = DEFAULT_NAME,
        keep_cluster: bool = False,
        node_image: str = NODE_IMAGE,
        workers: int = 0,
        port_mappings: Sequence[PortMapping] = (),
        runner: Runner | None = None,
        engine: Engine | None = None,
        state_dir: Path | None = None,
        search_path: str | None = None,
        progress: Progress = say,
    ) -> None:
        node_kubernetes_version(node_image)
        self.cluster_name = name
        self.keep_cluster = keep_cluster
        self.node_image = node_image
        self.workers = workers
        self.port_mappings = tuple(port_mappings)
        self.dir = (state_dir or _default_state()) / name
        self.runner: Runner = runner or SubprocessRunner(log_path=self.dir / "commands.log")
        self._engine = engine
        self.search_path = search_path
        self.progress = progress
        self._kind: str | None = None

    # -- paths -------------------------------------------------------------

    @property
    def context(self) -> str:
        """The kubeconfig context kind names after the cluster."""
        return f"kind-{self.cluster_name}"

    @property
    def node_container(self) -> str:
        """The Docker container of the control-plane node."""
        return f"{self.cluster_name}-control-plane"

    def kubeconfig_path(self) -> Path:
        """Where this provider keeps the cluster's kubeconfig (never ~/.kube/config)."""
        return self.dir / "kubeconfig"

    def config_path(self) -> Path:
        """The generated kind config."""
        return self.dir / "kind-config.yaml"

    @property
    def audit_dir(self) -> Path:
        """Host directory mounted into the node for the audit policy and log."""
        return self.dir / "audit"

    def audit_log(self) -> Path | None:
        """The apiserver audit log on the host (JSON lines), once the cluster wrote it."""
        path = self.audit_dir / "log" / AUDIT_LOG_NAME
        return path if path.exists() else None

    # -- tools -------------------------------------------------------------

    def kind(self) -> str:
        """Path of a kind CLI new enough; InfraError naming the install command otherwise."""
        if self._kind is None:
            path = require_tool(KIND, search_path=self.search_path)
            check_version(KIND, path, runner=self.runner)
            self._kind = path
        return self._kind

    def engine(self) -> Engine:
        """The Docker engine (checked reachable and recent), and the docker CLI kind uses."""
        if self._engine is None:
            require_tool(DOCKER_CLI, search_path=self.search_path)
            self._engine = DockerEngine()
        check_engine(self._engine)
        return self._engine

    # -- lifecycle ---------------------------------------------------------

    def up(self) -> Cluster:
        """Create the cluster, or reuse a running one of the same name; wait for Ready nodes."""
        self.ensure_cluster()
        self._wait_ready()
        return self._cluster()

    def ensure_cluster(self) -> bool:
        """The kind and Docker steps of :meth:`up`; True when a new cluster was created."""
        kind = self.kind()
        engine = self.engine()
        self.dir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.dir.with_suffix(".lock")), timeout=900):
            created = self.cluster_name not in self._existing_clusters(kind)
            if created:
                self._create(kind)
            else:
                self.progress(f"reusing kind cluster {self.cluster_name}")
                self._export_kubeconfig(kind)
            self._open_audit_log(engine)
        return created

    def down(self) -> None:
        """Delete the cluster, unless it is to be kept."""
        if self.keep_cluster:
            self.progress(
                f"keeping kind cluster {self.cluster_name} (--mochaos-keep-cluster); "
                f"delete it with `kind delete cluster --name {self.cluster_name}`"
            )
            return
        kind = self.kind()
        self.runner(
            [
                kind, "delete", "cluster", "--name", self.cluster_name,
                "--kubeconfig", str(self.kubeconfig_path()),
            ],
            what=f"kind delete cluster {self.cluster_name}",
            hint=f"delete it by hand: `kind delete cluster --name {self.cluster_name}`",
            timeout=300,
        )  # fmt: skip

    def load_image(self, ref: str) -> None:
        """Pull ``ref`` into Docker when missing, then copy it onto the kind nodes."""
        split_ref(ref)
        engine = self.engine()
        if not engine.has_image(ref):
            self.progress(f"pulling {ref}")
            engine.pull(ref, progress=self.progress)
        self.runner(
            [self.kind(), "load", "docker-image", "--name", self.cluster_name, ref],
            what=f"kind load docker-image {ref}",
            hint=f"check that `docker image inspect {ref}` works and the cluster is up",
            timeout=900,
        )

    # -- internals ---------------------------------------------------------

    def _existing_clusters(self, kind: str) -> list[str]:
        result = self.runner(
            [kind, "get", "clusters"],
            what="kind get clusters",
            hint="check that Docker is running",
            timeout=60,
        )
        return [ln.strip() for ln in result.stdout.splitlines() if ln.strip()]

    def _write_config(self) -> Path:
        policy_dir = self.audit_dir / "policy"
        policy_dir.mkdir(parents=True, exist_ok=True)
        (self.audit_dir / "log").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(AUDIT_POLICY, policy_dir / "audit-policy.yaml")
        config = kind_config(
            name=self.cluster_name,
            node_image=self.node_image,
            audit_dir=self.audit_dir,
            workers=self.workers,
            port_mappings=self.port_mappings,
        )
        self.config_path().write_text(yaml.safe_dump(config, sort_keys=False))
        return self.config_path()

    def _create(self, kind: str) -> None:
        config = self._write_config()
        self.progress(f"creating kind cluster {self.cluster_name} ({self.node_image})")
        self.runner(
            [
                kind, "create", "cluster", "--name", self.cluster_name,
                "--config", str(config), "--image", self.node_image,
                "--kubeconfig", str(self.kubeconfig_path()), "--wait", f"{CREATE_WAIT}s",
            ],
            what=f"kind create cluster {self.cluster_name}",
            hint=f"see {self.dir / 'commands.log'}; `kind export logs --name "
            f"{self.cluster_name}` collects the node logs",
            timeout=CREATE_WAIT + 600,
        )  # fmt: skip

    def _export_kubeconfig(self, kind: str) -> None:
        result = self.runner(
            [kind, "get", "kubeconfig", "--name", self.cluster_name],
            what=f"kind get kubeconfig {self.cluster_name}",
            hint=f"delete the cluster with `kind delete cluster --name {self.cluster_name}`",
            timeout=60,
        )
        path = self.kubeconfig_path()
        path.write_text(result.stdout)
        path.chmod(0o600)

    def _open_audit_log(self, engine: Engine) -> None:
        # The apiserver creates its log 0600 as root in the node; let the host user read it.
        path = f"{NODE_LOG_DIR}/{AUDIT_LOG_NAME}"
        code, out = engine.exec(self.node_container, ["chmod", "0644", path])
        if code != 0:
            self.progress(f"audit log not readable ({out.strip()[:120]}); audit counts may miss")

    def _api(self) -> Any:
        return new_api_client(
            self.kubeconfig_path(), user_agent="mochaos/kind", context=self.context
        )

    def _ready_nodes(self) -> tuple[bool, str]:
        from kubernetes import client

        api = self._api()
        try:
            nodes = client.CoreV1Api(api).list_node(_request_timeout=10).items
        finally:
            api.close()
        ready = [
            n.metadata.name
            for n in nodes
            if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
        ]
        want = 1 + self.workers
        return len(ready) >= want, f"{len(ready)}/{want} nodes Ready"

    def _wait_ready(self) -> None:
        wait_for(
            self._ready_nodes,
            what=f"kind cluster {self.cluster_name}",
            timeout=READY_TIMEOUT,
            hint=f"`kind export logs --name {self.cluster_name}` collects the node logs; "
            f"`kind delete cluster --name {self.cluster_name}` lets the next run start afresh",
        )

    def _server_version(self) -> str:
        from kubernetes import client

        api = self._api()
        try:
            return str(client.VersionApi(api).get_code(_request_timeout=10).git_version)
        finally:
            api.close()

    def _cluster(self) -> Cluster:
        return Cluster(
            name=self.cluster_name,
            provider=self.name,
            kubeconfig=self.kubeconfig_path(),
            version=self._server_version(),
            context=self.context,
            audit_log=self.audit_dir / "log" / AUDIT_LOG_NAME,
        )


def _default_state() -> Path:
    return state_dir() / "kind"
