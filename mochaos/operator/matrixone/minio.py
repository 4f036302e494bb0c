"""MinIO for MatrixOne's shared storage: a testcontainer on the kind network, or in-cluster.

A LogSet needs an S3 endpoint its pods can reach, a bucket, and a Secret with
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` in its own namespace (the
operator's e2e uses the same shape). ``DockerMinio`` runs MinIO next to the
kind nodes (testcontainers' Ryuk removes it when the session ends, even after a
crash); ``InClusterMinio`` deploys it as a pod, for --mochaos-minio=in-cluster and for
existing clusters, where no Docker network is shared.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mochaos.cluster.kind import KIND_NETWORK
from mochaos.errors import InfraError
from mochaos.operator.matrixone.waits import IMAGE_PULL, POD_START
from mochaos.tooling.apply import MANIFESTS, apply_objects, render_manifest
from mochaos.tooling.extras import import_extra
from mochaos.tooling.progress import Progress, say
from mochaos.tooling.waiting import wait_for
from mochaos.types import RUN_ID_LABEL

MINIO_IMAGE = "minio/minio:RELEASE.2023-11-01T01-57-10Z"
"""The release the operator's own e2e pins; its image ships the ``mc`` client we use."""

BUCKET = "matrixone"
ACCESS_KEY = "mochaos"
SECRET_KEY = "mochaos-minio-secret"
SECRET_NAME = "minio"
PORT = 9000
IN_CLUSTER_NAMESPACE = "mochaos-minio"
IN_CLUSTER_TEMPLATE = MANIFESTS / "minio" / "in-cluster.yaml"
READY_TIMEOUT = IMAGE_PULL + POD_START + 60.0
"""In-cluster MinIO: a pull of the MinIO image, the pod's start, the bucket made."""


@dataclass(frozen=True, slots=True)
class S3Store:
    """Where MatrixOne's pods find their object storage."""

    endpoint: str
    bucket: str
    access_key: str
    secret_key: str
    where: str

    def path(self, namespace: str) -> str:
        """The LogSet ``sharedStorage.s3.path`` for one test namespace: its own prefix."""
        return f"{self.bucket}/{namespace}"


def minio_secret(*, namespace: str, store: S3Store, run_id: str) -> dict[str, Any]:
    """The Secret a LogSet's ``sharedStorage.s3.secretRef`` names, in its namespace."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": SECRET_NAME,
            "namespace": namespace,
            "labels": {RUN_ID_LABEL: run_id},
        },
        "type": "Opaque",
        "stringData": {
            "AWS_ACCESS_KEY_ID": store.access_key,
            "AWS_SECRET_ACCESS_KEY": store.secret_key,
        },
    }


class MinioStore(Protocol):
    """A MinIO we start and stop."""

    def up(self) -> S3Store:
        """Start MinIO and create the bucket; where pods reach it."""
        ...

    def down(self) -> None:
        """Stop MinIO and remove what ``up`` created."""
        ...


def _minio_container(**kwargs: Any) -> Any:
    module = import_extra(
        "testcontainers.community.minio", why="MinIO runs as a testcontainer next to kind's nodes"
    )
    return module.MinioContainer(**kwargs)


class DockerMinio:
    """MinIO as a testcontainer attached to kind's Docker network."""

    def __init__(
        self,
        *,
        network: str = KIND_NETWORK,
        image: str = MINIO_IMAGE,
        container_factory: Callable[..., Any] = _minio_container,
        progress: Progress = say,
    ) -> None:
        self.network = network
        self.image = image
        self.name = f"mochaos-minio-{uuid.uuid4().hex[:8]}"
        self._factory = container_factory
        self.progress = progress
        self._container: Any = None

    def up(self) -> S3Store:
        """Start the container on the network, create the bucket, return its in-network URL."""
        self.progress(f"starting MinIO {self.image} on Docker network {self.network!r}")
        # A missing [kind] extra is reported as such, before anything Docker is tried.
        container = self._factory(image=self.image, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
        try:
            container.with_name(self.name).with_kwargs(network=self.network)
            container.start()
        except Exception as err:
            raise InfraError(
                f"MinIO container did not start: {str(err).splitlines()[0][:200]}",
                hint=f"check that the Docker network {self.network!r} exists (`kind get clusters`)",
            ) from err
        self._container = container
        client = container.get_client()
        if not client.bucket_exists(BUCKET):
            client.make_bucket(BUCKET)
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        networks = wrapped.attrs["NetworkSettings"]["Networks"]
        address = (networks.get(self.network) or {}).get("IPAddress")
        if not address:
            raise InfraError(
                f"MinIO container is not on Docker network {self.network!r}",
                hint="recreate the kind cluster; its nodes define that network",
            )
        # Pods reach it through their node, which sits on the same network.
        return S3Store(f"http://{address}:{PORT}", BUCKET, ACCESS_KEY, SECRET_KEY, "docker")

    def down(self) -> None:
        """Remove the container (idempotent)."""
        if self._container is not None:
            self._container.stop()
            self._container = None


class InClusterMinio:
    """MinIO as a Deployment in its own labelled namespace of the cluster."""

    def __init__(
        self,
        *,
        api_client: Any,
        run_id: str,
        namespace: str = IN_CLUSTER_NAMESPACE,
        image: str = MINIO_IMAGE,
        progress: Progress = say,
    ) -> None:
        self.api_client = api_client
        self.run_id = run_id
        self.namespace = namespace
        self.image = image
        self.progress = progress

    def manifests(self) -> list[dict[str, Any]]:
        """The namespace, credentials, Deployment and Service, rendered."""
        return render_manifest(
            IN_CLUSTER_TEMPLATE,
            {
                "namespace": self.namespace,
                "run_id": self.run_id,
                "image": self.image,
                "access_key": ACCESS_KEY,
                "secret_key": SECRET_KEY,
                "bucket": BUCKET,
            },
        )

    def up(self) -> S3Store:
        """Apply the manifests and wait until the bucket exists (the pod is Ready)."""
        self.progress(f"deploying MinIO {self.image} in namespace {self.namespace}")
        apply_objects(self.api_client, self.manifests())
        wait_for(
            self._available,
            what=f"MinIO in namespace {self.namespace}",
            timeout=READY_TIMEOUT,
            hint=f"`kubectl -n {self.namespace} describe pod -l app=minio` shows why",
        )
        endpoint = f"http://minio.{self.namespace}.svc:{PORT}"
        return S3Store(endpoint, BUCKET, ACCESS_KEY, SECRET_KEY, "in-cluster")

    def _available(self) -> tuple[bool, str]:
        from kubernetes import client

        dep = client.AppsV1Api(self.api_client).read_namespaced_deployment(
            "minio", self.namespace, _request_timeout=10
        )
        ready = dep.status.ready_replicas or 0
        return ready >= 1, f"{ready}/1 MinIO pods Ready (server up and bucket made)"

    def down(self) -> None:
        """Delete the MinIO namespace, only if it carries this run's label."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        core = client.CoreV1Api(self.api_client)
        try:
            ns = core.read_namespace(self.namespace, _request_timeout=10)
        except ApiException as err:
            if err.status == 404:
                return
            raise
        if (ns.metadata.labels or {}).get(RUN_ID_LABEL) != self.run_id:
            self.progress(f"not deleting namespace {self.namespace}: another run created it")
            return
        core.delete_namespace(self.namespace, _request_timeout=10)
