"""MinIO for the LogSet: the Secret, the testcontainer on the kind network, the in-cluster pod."""

from __future__ import annotations

from typing import Any

import pytest

from mochaos.errors import InfraError
from mochaos.operator.matrixone.minio import (
    ACCESS_KEY,
    BUCKET,
    MINIO_IMAGE,
    SECRET_KEY,
    SECRET_NAME,
    DockerMinio,
    InClusterMinio,
    S3Store,
    minio_secret,
)
from mochaos.types import RUN_ID_LABEL

STORE = S3Store("http://172.18.0.9:9000", BUCKET, ACCESS_KEY, SECRET_KEY, "docker")


def test_secret_has_the_keys_the_logset_reads() -> None:
    secret = minio_secret(namespace="ns1", store=STORE, run_id="r1")
    assert secret["kind"] == "Secret"
    assert secret["metadata"] == {
        "name": SECRET_NAME,
        "namespace": "ns1",
        "labels": {RUN_ID_LABEL: "r1"},
    }
    assert secret["stringData"] == {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
    }


def test_each_namespace_gets_its_own_prefix_in_the_bucket() -> None:
    assert STORE.path("e2e-1") == f"{BUCKET}/e2e-1"
    assert STORE.path("e2e-1") != STORE.path("e2e-2")


class FakeBucketClient:
    def __init__(self, existing: set[str]) -> None:
        self.buckets = existing

    def bucket_exists(self, name: str) -> bool:
        return name in self.buckets

    def make_bucket(self, name: str) -> None:
        self.buckets.add(name)


class FakeWrapped:
    def __init__(self, networks: dict[str, Any]) -> None:
        self.attrs = {"NetworkSettings": {"Networks": networks}}

    def reload(self) -> None:
        pass


class FakeMinioContainer:
    """Records the testcontainers calls DockerMinio makes."""

    def __init__(
        self, *, networks: dict[str, Any], fail: Exception | None = None, **kwargs
    ) -> None:
        self.kwargs = kwargs
        self.name: str | None = None
        self.run_kwargs: dict[str, Any] = {}
        self.started = self.stopped = False
        self.client = FakeBucketClient(set())
        self._networks = networks
        self._fail = fail

    def with_name(self, name: str) -> FakeMinioContainer:
        self.name = name
        return self

    def with_kwargs(self, **kwargs: Any) -> FakeMinioContainer:
        self.run_kwargs.update(kwargs)
        return self

    def start(self) -> FakeMinioContainer:
        if self._fail:
            raise self._fail
        self.started = True
        return self

    def get_client(self) -> FakeBucketClient:
        return self.client

    def get_wrapped_container(self) -> FakeWrapped:
        return FakeWrapped(self._networks)

    def stop(self) -> None:
        self.stopped = True


def factory(made: list[FakeMinioContainer], **behaviour: Any):
    def make(**kwargs: Any) -> FakeMinioContainer:
        container = FakeMinioContainer(**behaviour, **kwargs)
        made.append(container)
        return container

    return make


def test_docker_minio_joins_the_kind_network_and_makes_the_bucket() -> None:
    made: list[FakeMinioContainer] = []
    minio = DockerMinio(
        container_factory=factory(made, networks={"kind": {"IPAddress": "172.18.0.9"}}),
        progress=lambda line: None,
    )
    store = minio.up()
    (container,) = made
    assert container.kwargs == {
        "image": MINIO_IMAGE,
        "access_key": ACCESS_KEY,
        "secret_key": SECRET_KEY,
    }
    assert container.run_kwargs == {"network": "kind"}
    assert container.name is not None and container.name.startswith("mochaos-minio-")
    assert container.client.buckets == {BUCKET}
    assert store == STORE
    minio.down()
    assert container.stopped
    minio.down()


def test_docker_minio_that_cannot_start_is_an_infra_error() -> None:
    made: list[FakeMinioContainer] = []
    minio = DockerMinio(
        container_factory=factory(
            made, networks={}, fail=RuntimeError("network kind not found\nx")
        ),
        progress=lambda line: None,
    )
    with pytest.raises(InfraError) as info:
        minio.up()
    assert str(info.value) == (
        "MinIO container did not start: network kind not found: "
        "check that the Docker network 'kind' exists (`kind get clusters`)"
    )


def test_a_missing_testcontainers_module_is_reported_as_the_extra_to_install() -> None:
    from mochaos.tooling.extras import import_extra

    def without_module(**kwargs: Any) -> Any:
        import_extra("testcontainers.community.not_minio", why="MinIO runs as a testcontainer")

    with pytest.raises(InfraError) as info:
        DockerMinio(container_factory=without_module, progress=lambda line: None).up()
    assert str(info.value).startswith(
        "Python module testcontainers.community.not_minio is not installed"
    )
    assert str(info.value).endswith("install mo-chaos[kind], e.g. `pip install -e '.[kind]'`")
    assert "network" not in str(info.value)


def test_docker_minio_off_the_network_is_an_infra_error() -> None:
    made: list[FakeMinioContainer] = []
    minio = DockerMinio(
        container_factory=factory(made, networks={"bridge": {"IPAddress": "172.17.0.2"}}),
        progress=lambda line: None,
    )
    with pytest.raises(InfraError, match="MinIO container is not on Docker network 'kind'"):
        minio.up()


def test_in_cluster_minio_manifests() -> None:
    docs = InClusterMinio(api_client=None, run_id="r7", namespace="mochaos-minio").manifests()
    kinds = [d["kind"] for d in docs]
    assert kinds == ["Namespace", "Secret", "Deployment", "Service"]
    assert all(d["metadata"]["labels"][RUN_ID_LABEL] == "r7" for d in docs)
    assert {d["metadata"].get("namespace", d["metadata"]["name"]) for d in docs} == {
        "mochaos-minio"
    }
    pod = docs[2]["spec"]["template"]["spec"]
    server, bucket = pod["containers"]
    assert server["image"] == bucket["image"] == MINIO_IMAGE
    assert server["ports"] == [{"containerPort": 9000, "name": "s3"}]
    script = bucket["command"][-1]
    assert '"$MINIO_ROOT_USER"' in script and "${" not in script
    assert f"local/{BUCKET}" in script
    assert bucket["readinessProbe"]["exec"]["command"] == ["mc", "ls", f"local/{BUCKET}"]
    assert docs[1]["stringData"] == {
        "MINIO_ROOT_USER": ACCESS_KEY,
        "MINIO_ROOT_PASSWORD": SECRET_KEY,
    }
    assert docs[3]["spec"]["ports"][0]["port"] == 9000


def test_in_cluster_minio_is_accepted_by_the_local_apiserver_local(kube, namespace) -> None:
    from mochaos.tooling.apply import apply_objects

    docs = InClusterMinio(api_client=kube, run_id="r7", namespace=namespace).manifests()
    namespaced = [d for d in docs if d["kind"] != "Namespace"]
    applied = apply_objects(kube, namespaced, dry_run=True)
    assert [a["kind"] for a in applied] == ["Secret", "Deployment", "Service"]
    deployment = applied[1]
    # Defaulted by the apiserver, so it really went through validation and defaulting.
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
