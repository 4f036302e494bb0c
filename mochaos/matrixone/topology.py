"""Each test namespace's MatrixOne for a real operator: MinIO Secret, LogSet, DNSet, pool template.

Rendered from manifests/matrixone/. The namespace gets the Secret, LogSet and
DNSet at start and waits until both are Ready; the scenario then creates its
own CNPool carrying the rendered pool's template, deps, pod labels and maxPods
(read by :meth:`mochaos.operator.target.PoolSpec.of`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from mochaos.ctrl.objects import GROUP, RUN_ID_LABEL, VERSION
from mochaos.images.matrixone import DEFAULT_VERSION, image_ref
from mochaos.matrixone.storage import SECRET_NAME, S3Store, minio_secret
from mochaos.matrixone.waits import Timings
from mochaos.tooling.apply import MANIFESTS, apply_objects, render_manifest
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.waiting import wait_for

TOPOLOGY_DIR = MANIFESTS / "matrixone"
DEFAULT_MO_IMAGE = image_ref(DEFAULT_VERSION)
"""The MatrixOne version the operator's own CI runs its e2e with."""


@dataclass(frozen=True, slots=True)
class Topology:
    """Sizes of the MatrixOne objects each test namespace gets, for a 2-core runner.

    One log replica (the operator's e2e runs three: HAKeeper's availability is not what
    the claim races exercise, and two more replicas cost ~430 MiB and their Raft traffic);
    one TN; the CN pool's pods are the scenario's (``maxIdle`` per pool, capped by
    ``max_pods``). Measured per process in docs/matrixone-image.md.
    """

    pool: str = "pool"
    log_replicas: int = 1
    max_idle: int = 2
    max_pods: int = 6
    volume_size: str = "100Mi"
    cache_size: str = "100Mi"
    operator_version: str = "1.3.0"


def render_topology(
    *,
    namespace: str,
    run_id: str,
    mo_image: str,
    mo_version: str,
    store: S3Store,
    topology: Topology | None = None,
) -> list[dict[str, Any]]:
    """The Secret, LogSet, DNSet and CNPool for one namespace, in apply order."""
    topology = topology or Topology()
    values = {
        "namespace": namespace,
        "run_id": run_id,
        "mo_image": mo_image,
        "mo_version": mo_version,
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


def namespace_run_id(api_client: Any, namespace: str) -> str:
    """The run id label of ``namespace`` (every object we put in it carries the same)."""
    from kubernetes import client

    ns = client.CoreV1Api(api_client).read_namespace(namespace, _request_timeout=10)
    return (ns.metadata.labels or {}).get(RUN_ID_LABEL, "unlabelled")


def prepare_namespace(
    api_client: Any,
    *,
    namespace: str,
    mo_image: str,
    mo_version: str,
    store: S3Store,
    topology: Topology,
    timings: Timings,
    progress: Progress = say,
    interval: float = 2.0,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """Apply the MinIO Secret, LogSet and DNSet to ``namespace`` and wait until both are Ready
    (or ``cancel`` is set: InfraError).

    The scenario creates its own CNPool; the returned CNPool, rendered from cnpool.yaml
    and not applied, carries what it must use.
    """
    docs = render_topology(
        namespace=namespace,
        run_id=namespace_run_id(api_client, namespace),
        mo_image=mo_image,
        mo_version=mo_version,
        store=store,
        topology=topology,
    )
    (pool,) = [d for d in docs if d["kind"] == "CNPool"]
    progress(f"{namespace}: applying LogSet and DNSet ({mo_image}, MatrixOne {mo_version})")
    apply_objects(api_client, [d for d in docs if d["kind"] != "CNPool"])
    wait_for(
        lambda: matrixone_ready(api_client, namespace, topology.pool),
        what=f"MatrixOne LogSet and DNSet {namespace}/{topology.pool}",
        timeout=timings.base_ready,
        interval=interval,
        hint=f"`kubectl -n {namespace} get logset,dnset,pods` shows which part is stuck",
        cancel=cancel,
    )
    return pool
