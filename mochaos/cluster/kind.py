"""The kind provider: a real Kubernetes in Docker, for qualifying an operator image.

``kind create cluster`` from a generated config (pinned node image, apiserver
audit log through kubeadm patches and host mounts), reused when a healthy
cluster of the same name exists; the images the run needs are pulled through
the Docker engine and loaded the way its image store allows (kind_images);
``kind delete cluster`` on teardown unless the cluster is to be kept. The
engine is checked first: a cgroup v1 host or an old engine fails in one line.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock

from mochaos.cluster import kind_node
from mochaos.cluster.docker_engine import DockerEngine, Engine, EngineInfo, check_engine, parse_info
from mochaos.cluster.kind_images import load_image
from mochaos.errors import UsageError
from mochaos.kube import new_api_client
from mochaos.paths import state_dir
from mochaos.tooling.apply import MANIFESTS
from mochaos.tooling.image_ref import split_ref
from mochaos.tooling.progress import Progress, say
from mochaos.tooling.runner import Runner, SubprocessRunner
from mochaos.tooling.tools import Tool, check_version, require_tool
from mochaos.tooling.waiting import wait_for
from mochaos.types import Cluster

KIND_VERSION = "v0.33.0"
"""The kind release we pin (2026-08-26; served by the Go module proxy as sigs.k8s.io/kind).

The features we use set the floor: kubeadm config patches and extraMounts are
old, but a patch only applies when its apiVersion matches the config kind
generates, and kind generates kubeadm v1beta4 for Kubernetes >= 1.36 only
from v0.32.0 on (pkg/cluster/internal/kubeadm/config.go); the node image below
is one published with v0.33.0, and node images are supported only with the
kind release they were built for.
"""
NODE_IMAGE = (
    "kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed"
)
"""Kubernetes 1.36.4 node image published with kind v0.33.0 (whose default is v1.37.0).

Not pulled here (no registry access): the digest is the one public projects pin
next to kind v0.33.0; kind v0.33.0's own default is
``kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5``.
"""

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
        self._info: EngineInfo | None = None
        self.search_path = search_path
        self.progress = progress
        self._kind: str | None = None
        self._docker: str | None = None

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

    def docker(self) -> str:
        """Path of the docker CLI (kind drives it; so does the image export)."""
        if self._docker is None:
            self._docker = require_tool(DOCKER_CLI, search_path=self.search_path)
        return self._docker

    def engine(self) -> Engine:
        """The Docker engine, once checked: reachable, >= 20.10, on a cgroup v2 host."""
        if self._engine is None:
            self.docker()
            self._engine = DockerEngine()
        if self._info is None:
            self._info = check_engine(parse_info(self._engine.info()))
        return self._engine

    def engine_info(self) -> EngineInfo:
        """What ``docker info`` said about the engine (checked by :meth:`engine`)."""
        self.engine()
        assert self._info is not None
        return self._info

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
        """Delete the cluster, unless it is to be kept; first empty the root-owned audit log dir."""
        if self.keep_cluster:
            self.progress(
                f"keeping kind cluster {self.cluster_name} (--keep-cluster); "
                f"delete it with `kind delete cluster --name {self.cluster_name}`"
            )
            return
        kind = self.kind()
        self._remove_audit_log()
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
        """Pull ``ref`` into Docker when missing, then get it onto the nodes (see kind_images)."""
        split_ref(ref)
        engine = self.engine()
        if not engine.has_image(ref):
            self.progress(f"pulling {ref}")
            engine.pull(ref, progress=self.progress)
        outcome = load_image(
            ref,
            kind=self.kind(),
            docker=self.docker(),
            cluster=self.cluster_name,
            info=self.engine_info(),
            runner=self.runner,
            archive_dir=self.dir / "images",
            progress=self.progress,
        )
        self.progress(f"{ref}: {outcome}")

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
        log = f"{NODE_LOG_DIR}/{AUDIT_LOG_NAME}"
        failed = kind_node.open_file(engine, self.node_container, log)
        if failed:
            self.progress(f"audit log not readable ({failed}); audit counts may miss")

    def _remove_audit_log(self) -> None:
        # Written as root through the host mount: only the node can delete it, so the state
        # directory stays removable by the user once the cluster is gone.
        try:
            failed = kind_node.empty_directory(self.engine(), self.node_container, NODE_LOG_DIR)
        except Exception as err:
            failed = f"{type(err).__name__}: {str(err).splitlines()[0][:120]}"
        if failed:
            self.progress(
                f"could not empty the audit log directory in node {self.node_container} "
                f"({failed}); remove {self.audit_dir / 'log'} as root"
            )

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
