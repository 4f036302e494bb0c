"""The kind provider: a real Kubernetes in Docker, for qualifying an operator image.

``kind create cluster`` from a generated config (kind_config: the node image,
apiserver audit log through kubeadm patches and host mounts, and the host
workarounds this machine needs, each detected and announced), reused when a
healthy cluster of the same name exists. The node image is kind's pinned one when
the engine has it or can pull it, else the one mo-chaos builds offline
(:mod:`mochaos.images.node_image`). The images the run needs are loaded the way the
engine's image store allows (kind_images); ``kind delete cluster`` on teardown
unless the cluster is to be kept. The kind CLI is the one on PATH, else built.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock

from mochaos.cluster.kind import engine_host, kind_node
from mochaos.cluster.kind.docker_engine import (
    DockerEngine,
    Engine,
    EngineInfo,
    check_engine,
    parse_info,
)
from mochaos.cluster.kind.host_facts import HostFacts, Workaround, fail_cgroup_v1
from mochaos.cluster.kind.image_registry import (
    MIRRORED,
    LocalRegistry,
    config_path_patch,
    configure_node,
    serves,
)
from mochaos.cluster.kind.kind_config import (
    AUDIT_LOG_NAME,
    AUDIT_POLICY,
    NODE_IMAGE,
    NODE_LOG_DIR,
    PortMapping,
    kind_config,
    node_kubernetes_version,
)
from mochaos.cluster.kind.kind_images import load_image
from mochaos.config import REGISTRY_LOCAL as LOCAL
from mochaos.errors import InfraError, UsageError
from mochaos.images import node_image as offline
from mochaos.images.catalog import builder_for
from mochaos.images.go_tools import KIND_VERSION, kind_cli
from mochaos.kube import Cluster, new_api_client
from mochaos.paths import state_dir
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.image_ref import split_ref
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.runner import Runner, SubprocessRunner
from mochaos.tooling.tools import Tool, check_version, require_tool
from mochaos.tooling.waiting import wait_for

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
        node_image: str | None = None,
        workers: int = 0,
        port_mappings: Sequence[PortMapping] = (),
        runner: Runner | None = None,
        engine: Engine | None = None,
        state_dir: Path | None = None,
        search_path: str | None = None,
        progress: Progress = say,
        host: HostFacts | None = None,
        build_kind: Callable[[], str] | None = None,
        registry: str | None = None,
    ) -> None:
        """``registry``: None loads images into the nodes; ``"local"`` or an endpoint URL
        makes the nodes pull them through a registry (:mod:`.image_registry`)."""
        if node_image is not None:
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
        self._host = host
        self._build_kind = build_kind or _built_kind_cli
        self.registry = registry
        self._local_registry: LocalRegistry | None = None
        self._pull_endpoint = ""

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
        """Path of a kind CLI new enough: the one on PATH, else ours built from its module."""
        if self._kind is None:
            try:
                path = require_tool(KIND, search_path=self.search_path)
            except InfraError:
                self.progress(
                    f"kind is not on PATH: using kind {KIND_VERSION} built from its module"
                )
                path = self._build_kind()
            check_version(KIND, path, runner=self.runner)
            self._kind = path
        return self._kind

    def docker(self) -> str:
        """Path of the docker CLI (kind drives it; so does the image export)."""
        if self._docker is None:
            self._docker = require_tool(DOCKER_CLI, search_path=self.search_path)
        return self._docker

    def engine(self) -> Engine:
        """The Docker engine, once checked: reachable, >= 20.10, able to start the nodes."""
        if self._engine is None:
            self.docker()
            self._engine = DockerEngine()
        if self._info is None:
            info = check_engine(parse_info(self._engine.info()))
            shim = self.host().runtime_shim()
            if shim is not None and info.default_runtime != engine_host.RUNTIME_NAME:
                raise InfraError(
                    f"the Docker engine's default runtime ({info.default_runtime}) cannot start "
                    f"kind's privileged nodes here: {shim.why}",
                    hint="stop that daemon and start one with the shim: "
                    "`python -m mochaos kind engine up`",
                )
            self._info = info
        return self._engine

    def host(self) -> HostFacts:
        """What this machine lacks (capabilities, cgroup v2), read once."""
        if self._host is None:
            self._host = HostFacts.read()
        return self._host

    def workarounds(self) -> list[Workaround]:
        """The host workarounds the cluster config carries (detected, never assumed)."""
        found = [
            self.host().restrict_oom_score_adj(),
            fail_cgroup_v1(self.engine_info().cgroup_version),
        ]
        return [w for w in found if w is not None]

    def resolve_node_image(self) -> str:
        """The node image: as given; else kind's pinned one if the engine has it or pulls it;
        else the offline one mo-chaos builds (cached by recipe)."""
        if self.node_image is not None:
            return self.node_image
        engine = self.engine()
        if not engine.has_image(NODE_IMAGE):
            try:
                self.progress(f"pulling kind's node image {NODE_IMAGE}")
                engine.pull(NODE_IMAGE, progress=self.progress)
            except Exception as err:
                why = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
                self.progress(f"kind's node image cannot be pulled ({why}): using the offline one")
                self.node_image = self.offline_node_image()
                return self.node_image
        self.node_image = NODE_IMAGE
        return self.node_image

    def offline_node_image(self, *, force: bool = False) -> str:
        """The node image mo-chaos builds without a registry (built now unless cached)."""
        return offline.node_image(
            docker=self.docker_cli(),
            progress=self.progress,
            architecture=self.engine_info().platform.split("/")[1],
            force=force,
        )

    def engine_info(self) -> EngineInfo:
        """What ``docker info`` said about the engine (checked by :meth:`engine`)."""
        self.engine()
        assert self._info is not None
        return self._info

    def docker_cli(self) -> DockerCli:
        """The docker CLI on the engine kind uses, logging into this cluster's commands.log."""
        return DockerCli(path=self.docker(), log_path=self.dir / "commands.log")

    # -- lifecycle ---------------------------------------------------------

    def up(self) -> Cluster:
        """Create the cluster, or reuse a running one of the same name; wait for Ready nodes;
        with a registry, point the nodes' containerd at it (the local one started)."""
        self.ensure_cluster()
        self._wait_ready()
        if self.registry is not None:
            self._pull_through_registry()
        return self._cluster()

    @property
    def registry_container(self) -> str:
        """The Docker container of this cluster's local registry (``--mochaos-registry local``)."""
        return f"{self.cluster_name}-registry"

    def _pull_through_registry(self) -> None:
        if self.registry == LOCAL:
            with FileLock(str(self.dir.with_suffix(".lock")), timeout=900):
                local = self._local().up()
            self._local_registry = local
            self._pull_endpoint = local.endpoint
        else:
            assert self.registry is not None
            self._pull_endpoint = self.registry
        for node in self._nodes():
            configure_node(self.engine(), node, self._pull_endpoint)
        self.progress(f"kind nodes pull {' and '.join(MIRRORED)} images through "
                      f"{self._pull_endpoint}")  # fmt: skip

    def _local(self) -> LocalRegistry:
        return LocalRegistry(self.docker_cli(), name=self.registry_container,
                             network=KIND_NETWORK, progress=self.progress)  # fmt: skip

    def _nodes(self) -> list[str]:
        result = self.runner([self.kind(), "get", "nodes", "--name", self.cluster_name],
                             what="kind get nodes", timeout=60)  # fmt: skip
        return [ln.strip() for ln in result.stdout.splitlines() if ln.strip()]

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
            if self.registry == LOCAL:  # its nodes pull through it: kept with them
                self._local().down(keep=True)
            return
        kind = self.kind()
        self._remove_audit_log()
        if self.registry == LOCAL:
            self._local().down()
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
        """Get ``ref`` into Docker when missing (pulled, or built where mo-chaos knows how:
        :mod:`mochaos.images.catalog`), then onto the nodes (see kind_images). With a
        registry the nodes pull it instead: pushed to the local one, or checked to be served
        by the user's."""
        split_ref(ref)
        if self.registry is not None and self.registry != LOCAL:
            if not serves(self.registry, ref):
                raise UsageError(
                    f"registry {self.registry} does not serve {ref}: the kind nodes pull "
                    "every image the run needs from it",
                    hint=f"push {ref} there first, or run with --mochaos-registry local",
                )
            self.progress(f"{ref}: served by {self.registry}; the nodes pull it from there")
            return
        engine = self.engine()
        if self.registry == LOCAL:
            if self._local_registry is None:  # not brought up by this process's up()
                self._pull_through_registry()
            assert self._local_registry is not None
            if not engine.has_image(ref):
                self._obtain(engine, ref)
            self._local_registry.push(ref)
            self.progress(f"{ref}: pushed to {self._local_registry.name}; "
                          "the nodes pull it from there")  # fmt: skip
            return
        if not engine.has_image(ref):
            self._obtain(engine, ref)
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

    def obtain(self, ref: str) -> None:
        """Get ``ref`` into the engine (pulled, or built where mo-chaos knows how)."""
        engine = self.engine()
        if not engine.has_image(ref):
            self._obtain(engine, ref)

    def _obtain(self, engine: Engine, ref: str) -> None:
        builder = builder_for(ref)
        if builder is None or builder.pull_first:
            try:
                self.progress(f"pulling {ref}")
                engine.pull(ref, progress=self.progress)
                return
            except Exception as err:
                if builder is None:
                    raise
                why = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
                self.progress(f"{ref} cannot be pulled ({why}): building {builder.what}")
        builder.build(self.docker_cli(), self.progress)

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
        node_image = self.resolve_node_image()
        if self.workers and node_image.startswith(offline.REPOSITORY):
            raise UsageError(
                "the offline node image networks one node only (no kindnetd)",
                hint="use workers=0, or a registry that serves kind's node image",
            )
        settings: dict[str, dict[str, Any]] = {"containerd": {}, "kubelet": {}}
        for workaround in self.workarounds():
            self.progress(f"kind: {workaround.name}, because {workaround.why}")
        if self.host().restrict_oom_score_adj():
            settings["containerd"]["restrict_oom_score_adj"] = True
        if fail_cgroup_v1(self.engine_info().cgroup_version):
            settings["kubelet"]["failCgroupV1"] = False
        policy_dir = self.audit_dir / "policy"
        policy_dir.mkdir(parents=True, exist_ok=True)
        (self.audit_dir / "log").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(AUDIT_POLICY, policy_dir / "audit-policy.yaml")
        config = kind_config(
            name=self.cluster_name,
            node_image=node_image,
            audit_dir=self.audit_dir,
            workers=self.workers,
            port_mappings=self.port_mappings,
            containerd_settings=settings["containerd"],
            kubelet_settings=settings["kubelet"],
            containerd_patches=[config_path_patch()] if self.registry is not None else [],
        )
        self.config_path().write_text(yaml.safe_dump(config, sort_keys=False))
        return self.config_path()

    def _create(self, kind: str) -> None:
        config = self._write_config()
        self.progress(f"creating kind cluster {self.cluster_name} ({self.node_image})")
        assert self.node_image is not None
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


def _built_kind_cli() -> str:
    return str(kind_cli(progress=say))


def _default_state() -> Path:
    return state_dir() / "kind"
