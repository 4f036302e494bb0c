"""MinIO for MatrixOne's shared storage: a container on the kind network, or in-cluster.

A LogSet needs an S3 endpoint its pods can reach, a bucket, and a Secret with
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` in its own namespace (the
operator's e2e uses the same shape). ``DockerMinio`` runs MinIO next to the
kind nodes (registered for the reaper, which removes it after a crash);
``InClusterMinio`` deploys it as a pod, for --mochaos-minio=in-cluster and for
existing clusters, where no Docker network is shared. The image comes from
:mod:`mochaos.images.minio` (upstream's, or built from MinIO's Go module).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mochaos.cluster.kind.kind_provider import KIND_NETWORK
from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.errors import InfraError
from mochaos.images import minio as minio_image
from mochaos.matrixone.waits import IMAGE_PULL, POD_START
from mochaos.runstate import register_container, unregister_container
from mochaos.tooling.apply import MANIFESTS, apply_objects, render_manifest
from mochaos.tooling.docker_cli import DockerCli, daemon_reason
from mochaos.tooling.extras import import_extra
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.waiting import Check, wait_for

MINIO_IMAGE = minio_image.UPSTREAM_IMAGE
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


class DockerMinio:
    """MinIO as a container attached to a Docker network (kind's by default).

    The image is upstream's when the engine has it or can pull it, else MinIO built from
    its Go module (:mod:`mochaos.images.minio`). The container is created by id and
    registered for the reaper (a crashed run's MinIO is removed by the next run's), its S3
    port published on the loopback so that the bucket can be made from here, and its
    address on ``network`` is what the pods are given.
    """

    def __init__(
        self,
        *,
        network: str = KIND_NETWORK,
        docker: DockerCli | None = None,
        image: str | None = None,
        progress: Progress = say,
        bucket: Callable[[str, int], Check] | None = None,
    ) -> None:
        self.network = network
        self.image = image
        self.name = f"mochaos-minio-{uuid.uuid4().hex[:8]}"
        self._docker = docker
        self.progress = progress
        self._bucket = bucket or bucket_check
        self._cid: str | None = None

    def up(self) -> S3Store:
        """Start the container on the network, make the bucket, return its in-network URL
        (the container is removed again when any of it fails)."""
        try:
            return self._up()
        except BaseException:
            self.down()
            raise

    def _up(self) -> S3Store:
        docker = self._docker = self._docker or DockerCli.find()
        image = self.image or minio_image.ensure_image(docker, progress=self.progress)
        self.progress(f"starting MinIO {image} on Docker network {self.network!r}")
        cid = docker.create(
            [
                "--name",
                self.name,
                "--network",
                self.network,
                "--publish",
                f"127.0.0.1::{PORT}",
                "--env",
                f"MINIO_ROOT_USER={ACCESS_KEY}",
                "--env",
                f"MINIO_ROOT_PASSWORD={SECRET_KEY}",
                "--label",
                "mochaos.io/role=minio",
                image,
                "server",
                "/data",
                "--address",
                f":{PORT}",
            ]
        )
        register_container(cid, docker.engine)
        self._cid = cid
        started = docker.start(cid)
        if started.returncode != 0:
            raise InfraError(
                f"MinIO container did not start: {daemon_reason(started)}",
                hint=f"check that the Docker network {self.network!r} exists (`kind get clusters`)",
            )
        address = docker.address(cid, self.network)
        if not address:
            raise InfraError(
                f"MinIO container is not on Docker network {self.network!r}",
                hint="recreate the kind cluster; its nodes define that network",
            )
        host, port = docker.published(cid, PORT)
        wait_for(
            self._bucket(host, port),
            what=f"MinIO {self.name} and its bucket {BUCKET}",
            timeout=READY_TIMEOUT,
            interval=0.5,
            hint=f"docker logs {cid[:12]} shows why",
        )
        # Pods reach it through their node, which sits on the same network.
        return S3Store(f"http://{address}:{PORT}", BUCKET, ACCESS_KEY, SECRET_KEY, "docker")

    def down(self) -> None:
        """Remove the container (idempotent)."""
        if self._cid is not None and self._docker is not None:
            self._docker.remove(self._cid)
            unregister_container(self._cid)
            self._cid = None


def bucket_check(host: str, port: int) -> Check:
    """The poll that makes the bucket once MinIO at ``host:port`` answers S3 (the client
    module is imported first: a missing one is one line at once, not a long wait)."""
    minio = import_extra("minio", why="making MinIO's bucket for MatrixOne")
    client = minio.Minio(
        f"{host}:{port}", access_key=ACCESS_KEY, secret_key=SECRET_KEY, secure=False
    )

    def check() -> tuple[bool, str]:
        if not client.bucket_exists(BUCKET):
            client.make_bucket(BUCKET)
        return True, f"bucket {BUCKET} exists"

    return check


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
