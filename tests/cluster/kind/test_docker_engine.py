"""The Docker engine under kind: ``docker info`` read and checked, pulls, and the real engine.

The tests of the real engine need a reachable Docker daemon and skip, saying
so, when there is none. They build their one image locally (``docker import``
of a one-file rootfs): nothing is pulled.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mochaos.cluster.kind.docker_engine import (
    DockerEngine,
    EngineInfo,
    check_engine,
    parse_info,
    pull_progress,
)
from mochaos.cluster.kind.kind_images import save_single_platform
from mochaos.errors import InfraError
from mochaos.tooling.runner import SubprocessRunner

CLASSIC = {
    "ServerVersion": "28.2.2",
    "CgroupVersion": "2",
    "Driver": "overlay2",
    "DriverStatus": [["Backing Filesystem", "extfs"], ["Supports d_type", "true"]],
    "Architecture": "x86_64",
}


# -- docker info -------------------------------------------------------------------------------


def test_parse_info_of_the_classic_image_store() -> None:
    info = parse_info(CLASSIC)
    assert info == EngineInfo("28.2.2", "2", "overlay2", False, "x86_64")
    assert info.platform == "linux/amd64"
    assert info.image_store == "classic (overlay2)"


def test_parse_info_recognises_the_containerd_image_store_by_its_driver_type() -> None:
    status = [["driver-type", "io.containerd.snapshotter.v1"]]
    info = parse_info({**CLASSIC, "Driver": "overlayfs", "DriverStatus": status})
    assert info.containerd_store is True
    assert info.image_store == "containerd"
    # A snapshotter name alone is not the sign: Docker Desktop's default is "stargz".
    plain = parse_info({**CLASSIC, "Driver": "overlayfs", "DriverStatus": None})
    assert plain.containerd_store is False


@pytest.mark.parametrize(
    ("arch", "platform"),
    [("aarch64", "linux/arm64"), ("arm64", "linux/arm64"), ("x86_64", "linux/amd64")],
)
def test_the_nodes_platform_follows_the_engines_architecture(arch: str, platform: str) -> None:
    assert parse_info({**CLASSIC, "Architecture": arch}).platform == platform


def test_check_engine_accepts_docker_20_10_on_cgroup_v2() -> None:
    info = parse_info({**CLASSIC, "ServerVersion": "20.10.0"})
    assert check_engine(info) is info


def test_check_engine_refuses_an_old_engine() -> None:
    with pytest.raises(InfraError, match=r"^Docker Engine 19\.03\.12 is too old"):
        check_engine(parse_info({**CLASSIC, "ServerVersion": "19.03.12", "CgroupVersion": ""}))


def test_check_engine_accepts_a_cgroup_v1_host_the_provider_then_works_around() -> None:
    info = parse_info({**CLASSIC, "ServerVersion": "20.10.24", "CgroupVersion": "1"})
    assert check_engine(info) is info


def test_the_default_runtime_is_read_from_info() -> None:
    assert parse_info({**CLASSIC, "DefaultRuntime": "mochaos-runc"}).default_runtime == (
        "mochaos-runc"
    )
    assert parse_info(CLASSIC).default_runtime == "runc"


def test_pull_progress_reports_finished_layers_and_status() -> None:
    events = [
        {"status": "Pulling from mo/op", "id": "dev"},
        {"status": "Pulling fs layer", "id": "a"},
        {"status": "Pulling fs layer", "id": "b"},
        {"status": "Downloading", "id": "a", "progressDetail": {"current": 1, "total": 2}},
        {"status": "Pull complete", "id": "a"},
        {"status": "Already exists", "id": "b"},
        {"status": "Digest: sha256:abc"},
        {"status": "Status: Downloaded newer image for mo/op:dev"},
    ]
    assert list(pull_progress("mo/op:dev", events)) == [
        "pulling mo/op:dev: 1/2 layers done",
        "pulling mo/op:dev: 2/2 layers done",
        "pulling mo/op:dev: Digest: sha256:abc",
        "pulling mo/op:dev: Status: Downloaded newer image for mo/op:dev",
    ]
    with pytest.raises(InfraError, match="pulling x:y failed: manifest unknown"):
        list(pull_progress("x:y", [{"error": "manifest unknown"}]))


def test_unreachable_docker_engine_is_an_infra_error() -> None:
    with pytest.raises(InfraError) as info:
        DockerEngine(environment={"DOCKER_HOST": "unix:///nonexistent/mochaos/docker.sock"})
    assert str(info.value).startswith("Docker engine not reachable (")
    assert str(info.value).endswith(
        ": start Docker (kind and MinIO need it) or use --mochaos-cluster=local"
    )


# -- the real engine -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    """The local Docker engine; the test is skipped when none answers."""
    try:
        return DockerEngine()
    except InfraError as err:
        pytest.skip(f"no Docker engine reachable: {err}")


@pytest.fixture(scope="module")
def docker_cli(engine: DockerEngine) -> str:
    """The docker CLI next to the engine."""
    found = shutil.which("docker")
    if found is None:
        pytest.skip("the docker CLI is not on PATH")
    return found


def test_the_real_engines_info_parses_and_matches_the_cli(engine: DockerEngine, docker_cli: str):
    info = parse_info(engine.info())
    raw = subprocess.run([docker_cli, "info", "--format", "{{json .}}"], capture_output=True,
                         text=True, check=True, timeout=60).stdout  # fmt: skip
    cli = parse_info(json.loads(raw))
    assert info == cli
    assert info.cgroup_version in ("1", "2")
    assert info.platform.startswith("linux/")


def test_the_real_engine_passes_the_check_whatever_its_cgroup_version(engine: DockerEngine):
    info = parse_info(engine.info())
    assert check_engine(info) is info


@pytest.fixture()
def tiny_image(engine: DockerEngine, docker_cli: str, tmp_path: Path) -> Iterator[str]:
    """A one-file image made with ``docker import`` (no registry involved), removed after."""
    (tmp_path / "hello.txt").write_text("hello\n")
    with tarfile.open(tmp_path / "rootfs.tar", "w") as tar:
        tar.add(tmp_path / "hello.txt", arcname="hello.txt")
    ref = f"mochaos/tiny-{uuid.uuid4().hex[:8]}:v1"
    subprocess.run([docker_cli, "import", str(tmp_path / "rootfs.tar"), ref], check=True,
                   capture_output=True, timeout=120)  # fmt: skip
    yield ref
    subprocess.run([docker_cli, "image", "rm", ref], capture_output=True, timeout=120)


def _api_version(docker_cli: str) -> tuple[int, int]:
    out = subprocess.run([docker_cli, "version", "--format", "{{.Server.APIVersion}}"],
                         capture_output=True, text=True, check=True, timeout=60).stdout  # fmt: skip
    major, minor = out.strip().split(".")[:2]
    return int(major), int(minor)


def test_save_of_one_platform_on_the_real_engine(
    engine: DockerEngine, docker_cli: str, tiny_image: str, tmp_path: Path
) -> None:
    info = parse_info(engine.info())
    archive = tmp_path / "out.tar"
    failed = save_single_platform(
        tiny_image, docker=docker_cli, platform=info.platform, archive=archive,
        runner=SubprocessRunner(progress=None),
    )  # fmt: skip
    if _api_version(docker_cli) >= (1, 48):
        assert failed == ""
        with tarfile.open(archive) as tar:
            assert "index.json" in tar.getnames() or "manifest.json" in tar.getnames()
    else:
        # What load_image then reports before leaving the image to the nodes.
        assert "requires API version 1.48" in failed
        assert "\n" not in failed
