"""MinIO for the LogSet: the Secret, the container on the kind network, the in-cluster pod."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.errors import InfraError
from mochaos.matrixone.storage import (
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
from mochaos.paths import state_dir
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.runner import RecordingRunner, Result

STORE = S3Store("http://172.18.0.9:9000", BUCKET, ACCESS_KEY, SECRET_KEY, "docker")


@pytest.fixture()
def mochaos_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A state folder of the test's own: what it registers for the reaper stays there."""
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


def registered_containers() -> set[str]:
    """The containers this process has registered for the reaper."""
    path = state_dir() / "runs" / f"{os.getpid()}.json"
    return set(json.loads(path.read_text())["containers"]) if path.exists() else set()


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


CID = "d0c0" * 16
INSPECT_NETWORKS = (
    f"docker inspect --type container --format {{{{json .NetworkSettings.Networks}}}} {CID}"
)


def _minio(
    script: dict,
    *,
    buckets: list | None = None,
    image: str = "minio/minio:x",
    bucket_error: Exception | None = None,
) -> tuple[DockerMinio, RecordingRunner]:
    runner = RecordingRunner(
        {"docker create": CID + "\n", f"docker port {CID} 9000/tcp": "127.0.0.1:49153\n", **script}
    )
    made = [] if buckets is None else buckets

    def bucket(host: str, port: int):
        if bucket_error is not None:
            raise bucket_error
        made.append((host, port))
        return lambda: (True, "made")

    minio = DockerMinio(
        docker=DockerCli(path="docker", runner=runner),
        image=image,
        progress=lambda line: None,
        bucket=bucket,
    )
    return minio, runner


def test_docker_minio_joins_the_kind_network_and_makes_the_bucket(mochaos_state) -> None:
    buckets: list = []
    minio, runner = _minio(
        {INSPECT_NETWORKS: '{"kind": {"IPAddress": "172.18.0.9"}}'}, buckets=buckets
    )
    store = minio.up()
    assert store == STORE
    create = runner.commands()[0]
    assert create.startswith(f"docker create --name {minio.name} --network kind ")
    assert "--publish 127.0.0.1::9000" in create
    assert f"--env MINIO_ROOT_USER={ACCESS_KEY} --env MINIO_ROOT_PASSWORD={SECRET_KEY}" in create
    assert create.endswith("minio/minio:x server /data --address :9000")
    assert buckets == [("127.0.0.1", 49153)]
    assert registered_containers() == {CID}
    minio.down()
    assert runner.commands()[-1] == f"docker rm --force {CID}"
    assert registered_containers() == set()
    minio.down()
    assert runner.commands()[-1] == f"docker rm --force {CID}"


def test_docker_minio_that_cannot_start_is_an_infra_error_and_leaves_nothing(mochaos_state):
    refused = Result((), 1, "", "Error response from daemon: network kind not found\nError: x")
    minio, runner = _minio({"docker start": refused})
    with pytest.raises(InfraError) as info:
        minio.up()
    assert str(info.value) == (
        "MinIO container did not start: network kind not found: "
        "check that the Docker network 'kind' exists (`kind get clusters`)"
    )
    assert runner.commands()[-1] == f"docker rm --force {CID}"
    assert registered_containers() == set()


def test_a_missing_minio_client_is_reported_as_the_extra_to_install(mochaos_state) -> None:
    from mochaos.tooling.extras import import_extra

    try:
        import_extra("not_minio", why="making MinIO's bucket")
    except InfraError as err:
        missing = err
    minio, _ = _minio(
        {INSPECT_NETWORKS: '{"kind": {"IPAddress": "172.18.0.9"}}'}, bucket_error=missing
    )
    with pytest.raises(InfraError) as info:
        minio.up()
    assert str(info.value).startswith("Python module not_minio is not installed")
    assert registered_containers() == set()


def test_docker_minio_off_the_network_is_an_infra_error(mochaos_state) -> None:
    minio, runner = _minio({INSPECT_NETWORKS: '{"bridge": {"IPAddress": "172.17.0.2"}}'})
    with pytest.raises(InfraError, match="MinIO container is not on Docker network 'kind'"):
        minio.up()
    assert runner.commands()[-1] == f"docker rm --force {CID}"


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
