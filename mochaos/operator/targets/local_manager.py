"""The real operator manager on the local cluster: what ``binary:``, ``source:`` and
``image:`` (:mod:`~mochaos.operator.targets.container`) share.

Per session: the environment it runs on (kruise-manager of the version the checkout pins,
:mod:`mochaos.kruise.pin`, and the MatrixOne double, started on the local cluster when
absent), the operator's CRDs (from the checkout or ``--operator-crds``) and its webhooks,
served by one shared manager (:mod:`~mochaos.operator.webhooks.admission`). Per test namespace: a
LogSet and a DNSet (MatrixOne's log service and TN, realised by the local cluster's
kruise-manager and MatrixOne double), then a manager watching only that namespace.
Sessions on a CN go through the MatrixOne double's control interface. The real manager
cannot be time-scaled: its intervals are compiled in, and the waits below are sized from
them.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mochaos import crds as crd_install
from mochaos.cluster.environment import Environment
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.errors import InfraError, UsageError
from mochaos.kruise import pin as kruise_pin
from mochaos.kube import Cluster, api_client
from mochaos.matrixone.local import DoubleFaults, LocalMatrixOne
from mochaos.operator.runtime.manager_launch import ManagerLaunch, ready_in_log
from mochaos.operator.runtime.operator_container import OperatorContainer
from mochaos.operator.runtime.process import OperatorProcess
from mochaos.operator.runtime.via_interposer import interposer_for
from mochaos.operator.runtime.warm import WarmNamespaces
from mochaos.operator.target import PoolSpec, RunningOperator, Waits
from mochaos.operator.webhooks import admission as webhooks
from mochaos.operator.webhooks import host as webhook_host
from mochaos.progress import announce

READY_TIMEOUT = 90.0


def require_local(options: dict[str, Any], scheme: str) -> None:
    """binary:/source: need the local cluster's MatrixOne double; UsageError elsewhere."""
    cluster = options.get("cluster", "local")
    if cluster != "local":
        raise UsageError(
            f"{scheme}: targets run on the local cluster (its kruise-manager and MatrixOne "
            f"double), not on --mochaos-cluster={cluster}",
            hint="on kind, qualify the operator's image: --operator=image:<repo>:<tag>",
        )


def operator_crds_dir(options: dict[str, Any], missing: str) -> Path:
    """``--operator-crds``, for targets that bring no CRDs of their own; UsageError when
    missing (``missing`` says who needs them) or not a directory."""
    crds = options.get("operator_crds")
    if crds is None:
        raise UsageError(
            missing,
            hint="pass --operator-crds <checkout or its deploy/crds directory>",
        )
    crds = Path(crds).expanduser()
    if not crds.is_dir():
        raise UsageError(f"--operator-crds {crds} is not a directory", hint="check the path")
    return crds


def digest(path: Path) -> str:
    """Identifies a manager binary by content."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class ManagerTarget:
    """A real manager binary (built by the caller, or given), its CRDs and webhooks.

    The manager runs as a process; :class:`~mochaos.operator.targets.container.ContainerTarget`
    runs it from an image instead by replacing :meth:`_identity`, :meth:`_spawn_host` and
    :meth:`_operator`.
    """

    images: tuple[str, ...] = ()
    crds = "operator"
    time_scaled = False
    matrixone_components = DoubleFaults.components
    webhook_port = webhooks.PORT
    """Where the webhook host serves: the manager's fixed port (a stand-in's in tests)."""

    def __init__(
        self,
        *,
        spec: str,
        version: str,
        crd_root: Path,
        crd_source: str,
        binary: Path | None = None,
        build: Callable[[], Path] | None = None,
        ready_timeout: float = READY_TIMEOUT,
        warm: int = 0,
        run_id: str = "",
        interposer: str = "on",
    ) -> None:
        self.spec = spec
        self.interposer = interposer
        """``--mochaos-interposer``: on, each manager talks to the apiserver through one."""
        self.version = version
        self._crd_root = crd_root
        self._crd_source = crd_source
        self._binary = binary
        self._build = build
        self.ready_timeout = ready_timeout
        self._host: webhook_host.WebhookHost | None = None
        self._cluster: Cluster | None = None
        self._warm_size = warm
        self._run_id = run_id
        self.warm: WarmNamespaces | None = None
        """Namespaces made ready ahead for the next tests (started at install when wanted)."""

    @property
    def environment(self) -> Environment:
        """kruise-manager of the version the operator pins, and the MatrixOne double (a
        ``source:`` checkout is read once exported, i.e. from :meth:`install` on)."""
        return Environment(kruise=kruise_pin.pinned_version(self._crd_root), matrixone=True)

    @property
    def binary(self) -> Path:
        """The manager binary (built on first use for ``source:``)."""
        if self._binary is None:
            if self._build is None:
                raise UsageError(f"{self.spec}: no manager binary", hint="give binary:<path>")
            self._binary = self._build()
        return self._binary

    # -- how the manager runs (a process here) ---------------------------------------------

    def _identity(self) -> str:
        """Identifies the build the webhook host runs (building it first if needed)."""
        return digest(self.binary)

    @property
    def _manager_path(self) -> Path:
        return self.binary

    def _spawn_host(
        self, cluster: Cluster, launch: ManagerLaunch, certs: Path, log: Path
    ) -> webhook_host.HostHandle:
        """Start the webhook host's manager (detached) with its log in ``log``."""
        argv, env = launch.prepare(cluster)
        return webhook_host.spawn([*argv, *webhooks.host_args(certs)], env, log)

    def _operator(
        self, cluster: Cluster, launch: ManagerLaunch, log_path: Path, env: LocalMatrixOne
    ) -> OperatorProcess | OperatorContainer:
        """The (not yet started) manager of one namespace."""
        argv, penv = launch.prepare(cluster)
        return OperatorProcess(
            target=self.spec, version=self.version, user_agent=self.binary.name, command=argv,
            log_path=log_path, ready=lambda p: ready_in_log(p.log_lines()), env=penv,
            ready_timeout=self.ready_timeout, sessions=env.sessions, matrixone=env.faults,
            waits=Waits.of(env.timings),
        )  # fmt: skip

    # -- the target ---------------------------------------------------------------------------

    def install(self, cluster: Cluster) -> None:
        """Provide the environment, build or find the manager, install the operator's CRDs,
        start or join the webhook host."""
        build = self._identity()
        if cluster.provider == "local":  # elsewhere the operator's chart brings OpenKruise
            LocalProvider(name=cluster.name).provide(self.environment)
        crd_install.install(
            cluster, crd_install.operator_crds(self._crd_root, source=self._crd_source)
        )
        self._cluster = cluster
        self._host = webhook_host.WebhookHost(
            state=_state(cluster) / "operator-webhooks", build=build, attach_to=_state(cluster),
            port=self.webhook_port,
        )  # fmt: skip
        self._host.acquire(lambda: self._start_webhook_host(cluster))
        if self._warm_size > 0:
            self.warm = WarmNamespaces(
                cluster, run_id=self._run_id, size=self._warm_size,
                prepare=lambda w: self._start_in(
                    cluster, w.namespace, w.folder, started=w.started, cancel=w.cancel
                ),
            )  # fmt: skip

    def _start_webhook_host(self, cluster: Cluster) -> webhook_host.HostHandle:
        """Start the host (the caller holds its lock and checked the port), wait until it
        serves, register the webhooks it answers; its handle."""
        state = _state(cluster) / "operator-webhooks"
        certs = webhooks.make_certificates(state / "certs")
        _ensure_namespace(cluster, webhooks.WEBHOOK_NAMESPACE)
        handle = self._serve_webhooks(cluster, state)
        port, ctx = self.webhook_port, webhooks.tls_context(certs / "caBundle")
        try:
            crd_set = crd_install.operator_crds(self._crd_root, source=self._crd_source)
            hooks = [
                h for h in webhooks.candidates(crd_set.docs) if webhooks.served(h.path, ctx, port)
            ]
            ca = (certs / "caBundle").read_bytes()
            webhooks.register(cluster, webhooks.configurations(hooks, ca, port))
        except BaseException:
            handle.stop()
            raise
        webhooks.announce_hooks(hooks, port)
        return handle

    def _serve_webhooks(self, cluster: Cluster, state: Path) -> webhook_host.HostHandle:
        """Start the host's manager with the certificates in ``state/certs`` and wait until
        it completes a TLS handshake on :attr:`webhook_port` (stopped when it does not)."""
        certs = webhooks.make_certificates(state / "certs")
        launch = ManagerLaunch(
            binary=self._manager_path, namespace=webhooks.WEBHOOK_NAMESPACE,
            workdir=state / "host", hosts_file=None, webhooks=True,
        )  # fmt: skip
        log = state / "host" / "manager.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        port = self.webhook_port
        announce(f"starting the operator's webhook host ({self.spec}) on 127.0.0.1:{port}")
        handle = self._spawn_host(cluster, launch, certs, log)
        try:
            webhooks.wait_serving(webhooks.tls_context(certs / "caBundle"), log, handle.alive, port)
        except BaseException:
            handle.stop()
            raise
        return handle

    def start(self, cluster: Cluster, namespace: str, log_dir: Path) -> RunningOperator:
        """Prepare the namespace's MatrixOne, start a manager for it, wait until ready; a
        namespace made ready ahead (:attr:`warm`) already has both."""
        ready = self.warm.running(namespace) if self.warm is not None else None
        return ready or self._start_in(cluster, namespace, log_dir)

    def _start_in(
        self, cluster: Cluster, namespace: str, log_dir: Path, *,
        started: Callable[[RunningOperator], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> RunningOperator:  # fmt: skip
        """Start the namespace's manager (``started`` is told at once), bring its MatrixOne
        up (giving up once ``cancel`` is set); the log and the manager's files go to
        ``log_dir``."""
        env = LocalMatrixOne(cluster, namespace)
        via = interposer_for(cluster, log_dir, mode=self.interposer)
        launch = ManagerLaunch(
            binary=self._manager_path, namespace=namespace, workdir=log_dir / "manager",
            hosts_file=env.hosts_file, kubeconfig=via.kubeconfig if via else None,
        )  # fmt: skip
        running = self._operator(cluster, launch, log_dir / "operator.log", env)
        running.interposer = via
        try:
            running.start()
        except BaseException:
            running.stop()
            raise
        if started is not None:
            started(running)
        try:
            running.pool_spec = PoolSpec.of(env.prepare(cancel))
        except BaseException:
            running.stop()
            raise
        return running

    def close(self) -> None:
        """Delete the namespaces made ready ahead that no test used; leave the webhook host
        (the last user stops it and removes its configuration)."""
        if self.warm is not None:
            self.warm.close()
            self.warm = None
        if self._host is not None and self._cluster is not None:
            cluster = self._cluster
            self._host.release(lambda: webhooks.unregister(cluster))
            self._host = None


def _state(cluster: Cluster) -> Path:
    if cluster.state_dir is None:
        raise InfraError(f"cluster {cluster.name} has no state folder", hint="use the local one")
    return cluster.state_dir


def _ensure_namespace(cluster: Cluster, name: str) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    with api_client(cluster.kubeconfig, user_agent="mochaos/install",
                    context=cluster.context) as api:  # fmt: skip
        try:
            client.CoreV1Api(api).create_namespace({"metadata": {"name": name}})
        except ApiException as err:
            if err.status != 409:
                raise


def binary_version(path: Path) -> str:
    """A short identity of a manager binary for reports: its name and digest."""
    return f"{path.name}@sha256:{digest(path)[:12]}"


__all__ = ["ManagerTarget", "binary_version", "operator_crds_dir", "require_local"]
