"""The real operator as a target: ``image:<ref>`` (installed by its chart) and ``installed``.

The operator is cluster-wide: ``install`` runs once per cluster (Helm, OpenKruise,
MinIO); ``start`` gives each test namespace the MatrixOne base a CN pool needs
(MinIO Secret, LogSet, DNSet from manifests/matrixone/) and a handle on the
operator pod: its log followed across restarts for the retry counter,
restart / pause / kill acting on its Deployment and pod, and the CNPool spec
the scenario's pool must use on this cluster.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock

from mochaos.cluster.commands import (
    MANIFESTS,
    Progress,
    Runner,
    SubprocessRunner,
    apply_objects,
    render_manifest,
    say,
    wait_for,
)
from mochaos.cluster.kind import split_ref
from mochaos.cluster.minio import (
    MINIO_IMAGE,
    SECRET_NAME,
    DockerMinio,
    InClusterMinio,
    MinioStore,
    S3Store,
    minio_secret,
)
from mochaos.errors import InfraError, UsageError
from mochaos.kube import new_api_client
from mochaos.operator.helm import (
    CHART_NAME,
    KRUISE_IMAGE,
    ChartOptions,
    install_chart,
    operator_ready,
    wait_operator_ready,
)
from mochaos.paths import state_dir
from mochaos.types import GROUP, RUN_ID_LABEL, VERSION, Cluster

DEFAULT_MO_IMAGE = "matrixorigin/matrixone:1.2.3"
"""The MatrixOne version the operator's own CI runs its e2e with."""

USER_AGENT = "manager/"
"""Prefix of the operator's user agent in the audit log.

Assumption: the operator does not set its own user agent, so client-go's
default applies: ``<binary>/<version> (<os>/<arch>) kubernetes/<commit>``,
and the chart runs the binary ``/manager``. Its service account
(``system:serviceaccount:<namespace>:<release>-matrixone-operator``) is the
firmer identity and is on :attr:`PodOperator.username`.
"""

MINIO_MODES = ("auto", "docker", "in-cluster")
TOPOLOGY_DIR = MANIFESTS / "matrixone"
POOL_READY_TIMEOUT = 600.0
"""The operator's e2e waits 10 minutes for its pool's CN pods."""
BASE_READY_TIMEOUT = 600.0
"""LogSet and DNSet: the e2e allows 5 minutes each; they start together here."""
RESTART_TIMEOUT = 180.0
LOG_IDLE_TIMEOUT = 5.0
"""A log stream silent this long is reopened (and ``stop`` checked)."""


# --------------------------------------------------------------------------
# The MatrixOne topology of one test namespace
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Topology:
    """Sizes of the MatrixOne objects each test namespace gets (small runner defaults)."""

    pool: str = "pool"
    log_replicas: int = 3
    max_idle: int = 2
    max_pods: int = 6
    volume_size: str = "100Mi"
    cache_size: str = "100Mi"
    operator_version: str = "1.3.0"


def render_topology(
    *, namespace: str, run_id: str, mo_image: str, store: S3Store, topology: Topology | None = None
) -> list[dict[str, Any]]:
    """The Secret, LogSet, DNSet and CNPool for one namespace, in apply order."""
    topology = topology or Topology()
    values = {
        "namespace": namespace,
        "run_id": run_id,
        "mo_image": mo_image,
        "pool": topology.pool,
        "log_replicas": topology.log_replicas,
        "max_idle": topology.max_idle,
        "max_pods": topology.max_pods,
        "volume_size": topology.volume_size,
        "cache_size": topology.cache_size,
        "operator_version": topology.operator_version,
        "s3_path": store.path(namespace),
        "s3_endpoint": store.endpoint,
        "s3_secret": SECRET_NAME,
    }
    docs = [minio_secret(namespace=namespace, store=store, run_id=run_id)]
    for name in ("logset", "dnset", "cnpool"):
        docs += render_manifest(TOPOLOGY_DIR / f"{name}.yaml", values)
    return docs


def render_claimset(
    *, namespace: str, run_id: str, name: str, replicas: int, pool: str = "pool"
) -> dict[str, Any]:
    """A CNClaimSet of ``replicas`` claims on the pool's CN pods."""
    (doc,) = render_manifest(
        TOPOLOGY_DIR / "cnclaimset.yaml",
        {"namespace": namespace, "run_id": run_id, "name": name, "replicas": replicas,
         "pool": pool},
    )  # fmt: skip
    return doc


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """What a scenario's CNPool needs on a real cluster (from manifests/matrixone/cnpool.yaml)."""

    template: dict[str, Any]
    deps: dict[str, Any]
    pod_labels: dict[str, str]
    ready_timeout: float = POOL_READY_TIMEOUT


def _ready_condition(obj: dict[str, Any]) -> str:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status"))
    return "unknown"


def matrixone_ready(api_client: Any, namespace: str, name: str) -> tuple[bool, str]:
    """One poll: the LogSet and the DNSet report condition Ready=True."""
    from kubernetes import client

    custom = client.CustomObjectsApi(api_client)
    states = {}
    for plural, kind in (("logsets", "LogSet"), ("dnsets", "DNSet")):
        obj = custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, name, _request_timeout=10
        )
        states[kind] = _ready_condition(obj)
    done = all(v == "True" for v in states.values())
    return done, ", ".join(f"{k} Ready={v}" for k, v in states.items())


def prepare_namespace(
    api_client: Any,
    *,
    namespace: str,
    mo_image: str,
    store: S3Store,
    topology: Topology,
    progress: Progress = say,
) -> PoolSpec:
    """Apply the MinIO Secret, LogSet and DNSet to ``namespace`` and wait until both are Ready.

    The scenario creates its own CNPool; the returned spec carries the template,
    deps and pod labels rendered from cnpool.yaml for it to use.
    """
    docs = render_topology(
        namespace=namespace,
        run_id=_namespace_run_id(api_client, namespace),
        mo_image=mo_image,
        store=store,
        topology=topology,
    )
    (pool,) = [d for d in docs if d["kind"] == "CNPool"]
    progress(f"{namespace}: applying LogSet and DNSet ({mo_image})")
    apply_objects(api_client, [d for d in docs if d["kind"] != "CNPool"])
    wait_for(
        lambda: matrixone_ready(api_client, namespace, topology.pool),
        what=f"MatrixOne LogSet and DNSet {namespace}/{topology.pool}",
        timeout=BASE_READY_TIMEOUT,
        hint=f"`kubectl -n {namespace} get logset,dnset,pods` shows which part is stuck",
    )
    spec = pool["spec"]
    return PoolSpec(template=spec["template"], deps=spec["deps"], pod_labels=spec["podLabels"])


# --------------------------------------------------------------------------
# The running operator: a Deployment in the cluster
# --------------------------------------------------------------------------


def parse_log_timestamp(text: str) -> int:
    """Nanoseconds since the epoch of a kubelet log timestamp (RFC 3339, up to ns)."""
    seconds, _, rest = text.rstrip("Z").partition(".")
    base = datetime.strptime(seconds, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return int(base.timestamp()) * 1_000_000_000 + int((rest + "000000000")[:9] or 0)


def split_log_line(raw: str) -> tuple[int, str] | None:
    """(timestamp ns, line) of a ``timestamps=true`` log line; None when it has no stamp."""
    stamp, _, line = raw.partition(" ")
    try:
        return parse_log_timestamp(stamp), line
    except ValueError:
        return None


class PodOperator:
    """The operator Deployment seen as a RunningOperator (shared by every namespace).

    ``pool_spec`` is what a scenario's CNPool needs on this cluster; ``core`` /
    ``apps`` replace the CoreV1Api / AppsV1Api built from ``api_client`` (tests
    pass fakes).
    """

    def __init__(
        self,
        *,
        target: str,
        version: str,
        api_client: Any,
        namespace: str,
        deployment: str,
        selector: str,
        log_path: Path | None = None,
        progress: Progress = say,
        core: Any = None,
        apps: Any = None,
        pool_spec: PoolSpec | None = None,
    ) -> None:
        self.target = target
        self.pool_spec = pool_spec
        self.version = version
        self.user_agent = USER_AGENT
        self.username = f"system:serviceaccount:{namespace}:{deployment}"
        self.api = api_client
        self.namespace = namespace
        self.deployment = deployment
        self.selector = selector
        self.log_path = log_path
        self.progress = progress
        self.started_ns = time.time_ns()
        self._core_api = core
        self._apps_api = apps
        self._resume: threading.Timer | None = None
        self._paused_replicas: int | None = None
        self._lock = threading.Lock()

    # -- pods ----------------------------------------------------------------

    def _core(self) -> Any:
        if self._core_api is None:
            from kubernetes import client

            self._core_api = client.CoreV1Api(self.api)
        return self._core_api

    def _apps(self) -> Any:
        if self._apps_api is None:
            from kubernetes import client

            self._apps_api = client.AppsV1Api(self.api)
        return self._apps_api

    def pods(self) -> list[Any]:
        """The operator's pods, newest first."""
        items = (
            self._core()
            .list_namespaced_pod(self.namespace, label_selector=self.selector, _request_timeout=10)
            .items
        )
        return sorted(items, key=lambda p: p.metadata.creation_timestamp, reverse=True)

    def _running_pod(self) -> Any | None:
        for pod in self.pods():
            if pod.metadata.deletion_timestamp is None and pod.status.phase == "Running":
                return pod
        return None

    # -- log -----------------------------------------------------------------

    def follow_log(self, stop: threading.Event) -> Iterator[str]:
        """Yield the operator's log lines written since ``start``, across pod restarts.

        Each stream asks the kubelet for timestamps; a line at or before the
        last one seen from that pod is a repeat after a reconnect and is
        skipped. A pod that restarts or is replaced ends the stream; the next
        running pod is followed from its first line.
        """
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        last_seen: dict[str, int] = {}
        sink = self.log_path.open("a", encoding="utf-8") if self.log_path else None
        try:
            while not stop.is_set():
                pod = self._safe(self._running_pod)
                if pod is None:
                    stop.wait(1.0)
                    continue
                uid = pod.metadata.uid
                after = last_seen.get(uid, self.started_ns)
                try:
                    for stamp, line in self._stream(pod.metadata.name, after):
                        if stamp <= after:
                            continue
                        after = last_seen[uid] = stamp
                        if sink:
                            sink.write(line + "\n")
                            sink.flush()
                        yield line
                        if stop.is_set():
                            return
                except (HTTPError, ApiException, OSError):
                    stop.wait(0.5)
        finally:
            if sink:
                sink.close()

    def _stream(self, pod: str, after_ns: int) -> Iterator[tuple[int, str]]:
        since = max(1, int((time.time_ns() - after_ns) / 1e9) + 2)
        resp = self._core().read_namespaced_pod_log(
            pod,
            self.namespace,
            follow=True,
            timestamps=True,
            since_seconds=since,
            _preload_content=False,
            _request_timeout=(10, LOG_IDLE_TIMEOUT),
        )
        try:
            buf = b""
            for chunk in resp.stream(4096, decode_content=True):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for raw in lines:
                    parsed = split_log_line(raw.decode(errors="replace"))
                    if parsed:
                        yield parsed
        finally:
            resp.release_conn()

    @staticmethod
    def _safe(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception:
            return None

    # -- chaos ---------------------------------------------------------------

    def _delete_pods(self, grace: int | None) -> list[str]:
        names = []
        for pod in self.pods():
            if pod.metadata.deletion_timestamp is None:
                self._core().delete_namespaced_pod(
                    pod.metadata.name,
                    self.namespace,
                    grace_period_seconds=grace,
                    _request_timeout=10,
                )
                names.append(pod.metadata.name)
        return names

    def _wait_replaced(self, old: list[str]) -> None:
        def replaced() -> tuple[bool, str]:
            pod = self._running_pod()
            ready = (
                pod is not None
                and pod.metadata.name not in old
                and any(
                    c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []
                )
            )
            return ready, f"waiting for a new Ready pod (old: {', '.join(old)})"

        wait_for(replaced, what=f"operator {self.deployment}", timeout=RESTART_TIMEOUT)

    def restart(self) -> None:
        """Delete the operator pod (graceful) and wait for its replacement to be Ready."""
        self._wait_replaced(self._delete_pods(grace=None))

    def kill(self) -> None:
        """Delete the operator pod with grace period 0 (no chance to clean up)."""
        self._delete_pods(grace=0)

    def _scale(self, replicas: int) -> None:
        self._apps().patch_namespaced_deployment_scale(
            self.deployment, self.namespace, {"spec": {"replicas": replicas}}, _request_timeout=10
        )

    def pause(self, seconds: float) -> None:
        """Scale the Deployment to 0 now and back after ``seconds`` (returns at once)."""
        with self._lock:
            if self._paused_replicas is None:
                dep = self._apps().read_namespaced_deployment(
                    self.deployment, self.namespace, _request_timeout=10
                )
                self._paused_replicas = dep.spec.replicas or 1
            self._scale(0)
            if self._resume:
                self._resume.cancel()
            self._resume = threading.Timer(seconds, self.resume)
            self._resume.daemon = True
            self._resume.start()

    def resume(self) -> None:
        """Scale a paused Deployment back to its replicas (no-op when not paused)."""
        with self._lock:
            if self._resume:
                self._resume.cancel()
                self._resume = None
            if self._paused_replicas is not None:
                self._scale(self._paused_replicas)
                self._paused_replicas = None

    def stop(self) -> None:
        """End this namespace's use of the shared operator: undo a pause, leave it running."""
        self.resume()


# --------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------


def image_version(image: str) -> str:
    """The tag of an image reference (or its short digest when it has no tag)."""
    name, _, digest = image.partition("@")
    slash, colon = name.rfind("/"), name.rfind(":")
    if colon > slash:
        return name[colon + 1 :]
    return digest.removeprefix("sha256:")[:12] if digest else "latest"


def _client_for(cluster: Cluster) -> Any:
    return new_api_client(
        cluster.kubeconfig, user_agent="mochaos/operator", context=cluster.context
    )


def _namespace_run_id(api_client: Any, namespace: str) -> str:
    from kubernetes import client

    ns = client.CoreV1Api(api_client).read_namespace(namespace, _request_timeout=10)
    return (ns.metadata.labels or {}).get(RUN_ID_LABEL, "unlabelled")


class _ClusterOperator:
    """What both targets share: MinIO, the per-namespace topology, the pod handle."""

    crds = "operator"
    time_scaled = False

    spec: str
    version: str

    def __init__(
        self,
        *,
        mo_image: str,
        minio: str,
        topology: Topology,
        chart: ChartOptions,
        client_factory: Callable[[Cluster], Any],
        progress: Progress,
        run_id: str,
    ) -> None:
        if minio not in MINIO_MODES:
            raise UsageError(f"unknown MinIO mode {minio!r}", hint="use auto, docker or in-cluster")
        split_ref(mo_image)
        self.mo_image = mo_image
        self.minio = minio
        self.topology = topology
        self.chart = chart
        self.client_factory = client_factory
        self.progress = progress
        self.run_id = run_id
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

    def close(self) -> None:
        """Stop the MinIO this target started (the in-cluster one stays with the cluster)."""
        if isinstance(self._minio, DockerMinio):
            self._minio.down()
        self._minio, self._store = None, None

    def install(self, cluster: Cluster) -> None:
        """Make the operator ready and MinIO available (subclasses add the chart)."""
        raise NotImplementedError

    def start(self, cluster: Cluster, namespace: str, log_dir: Path) -> PodOperator:
        """Give ``namespace`` its MatrixOne base (see :func:`prepare_namespace`); the handle."""
        if self._store is None:
            self.install(cluster)
        assert self._store is not None
        api = self.client_factory(cluster)
        pool_spec = prepare_namespace(
            api,
            namespace=namespace,
            mo_image=self.mo_image,
            store=self._store,
            topology=self.topology,
            progress=self.progress,
        )
        log_dir.mkdir(parents=True, exist_ok=True)
        return PodOperator(
            target=self.spec,
            version=self.version,
            api_client=api,
            namespace=self.chart.namespace,
            deployment=self.chart.deployment,
            selector=self.chart.selector,
            log_path=log_dir / "operator.log",
            progress=self.progress,
            pool_spec=pool_spec,
        )


class ImageTarget(_ClusterOperator):
    """``image:<repository>:<tag>``: install that image with the operator's Helm chart."""

    def __init__(
        self,
        *,
        ref: str,
        mo_image: str = DEFAULT_MO_IMAGE,
        minio: str = "auto",
        topology: Topology | None = None,
        chart: ChartOptions | None = None,
        runner: Runner | None = None,
        search_path: str | None = None,
        state: Path | None = None,
        client_factory: Callable[[Cluster], Any] = _client_for,
        progress: Progress = say,
        run_id: str = "mochaos",
    ) -> None:
        super().__init__(
            mo_image=mo_image,
            minio=minio,
            topology=topology or Topology(),
            chart=chart or ChartOptions(),
            client_factory=client_factory,
            progress=progress,
            run_id=run_id,
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
        with FileLock(str(self.state / f"install-{cluster.name}.lock"), timeout=1800):
            if self._installed(api):
                self.progress(f"operator {self.ref} already installed and ready")
            else:
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


class InstalledTarget(_ClusterOperator):
    """``installed``: an operator already running in the cluster (found by its chart labels)."""

    def __init__(
        self,
        *,
        mo_image: str = DEFAULT_MO_IMAGE,
        minio: str = "auto",
        topology: Topology | None = None,
        client_factory: Callable[[Cluster], Any] = _client_for,
        progress: Progress = say,
        run_id: str = "mochaos",
    ) -> None:
        super().__init__(
            mo_image=mo_image,
            minio=minio,
            topology=topology or Topology(),
            chart=ChartOptions(),
            client_factory=client_factory,
            progress=progress,
            run_id=run_id,
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


def _chart_kwargs(options: dict[str, Any], *, chart: bool) -> dict[str, Any]:
    """Keyword arguments for the image targets from the run's settings (unset: default)."""
    kwargs: dict[str, Any] = {
        k: options[k] for k in ("mo_image", "minio", "run_id") if options.get(k) is not None
    }
    if chart:
        fields = {"repo_url": "chart_repo", "version": "chart_version", "chart_path": "chart_path"}
        chosen = {f: options[o] for f, o in fields.items() if options.get(o) is not None}
        if chosen:
            kwargs["chart"] = ChartOptions(**chosen)
    return kwargs


def image_from_spec(value: str, options: dict[str, Any]) -> ImageTarget:
    """``image:<repository>:<tag>``."""
    if not value:
        raise UsageError("image: target needs a reference", hint="use image:<repo>:<tag>")
    return ImageTarget(ref=value, **_chart_kwargs(options, chart=True))


def installed_from_spec(value: str, options: dict[str, Any]) -> InstalledTarget:
    """``installed``."""
    if value:
        raise UsageError(f"installed takes no value (got {value!r})", hint="use installed")
    return InstalledTarget(**_chart_kwargs(options, chart=False))
