"""The docker CLI wrapper: the command lines it runs, by container id, and its one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mochaos.errors import InfraError, UsageError
from mochaos.tooling.docker_cli import ContainerState, DockerCli
from mochaos.tooling.runner import RecordingRunner, Result

CID = "0123456789ab" + "c" * 52


def state(status: str, code: int = 0) -> str:
    return json.dumps({"Status": status, "ExitCode": code, "Error": ""})


def cli(script: dict) -> tuple[DockerCli, RecordingRunner]:
    runner = RecordingRunner(script)
    return DockerCli(path="docker", runner=runner), runner


def test_the_engine_version_is_read_and_an_unreachable_engine_is_one_line():
    docker, _ = cli({"docker version": "20.10.24+dfsg1\n"})
    assert docker.server_version() == "20.10.24+dfsg1"
    down = Result((), 1, "", "Cannot connect to the Docker daemon at unix:///x.sock. Is the "
                  "docker daemon running?\n")  # fmt: skip
    docker, _ = cli({"docker version": down})
    with pytest.raises(UsageError) as info:
        docker.server_version()
    assert str(info.value).startswith("no Docker engine reachable (Cannot connect to the Docker")
    assert "DOCKER_HOST" in str(info.value) and "\n" not in str(info.value)


def test_no_docker_on_path_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match="docker not found on PATH: install Docker Engine"):
        DockerCli.find()


def test_the_engine_named_by_docker_host_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path):
    (tmp_path / "docker").write_text("#!/bin/sh\n")
    (tmp_path / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/other.sock")
    docker = DockerCli.find()
    assert docker.engine == "unix:///run/other.sock"
    assert docker.environment()["DOCKER_HOST"] == "unix:///run/other.sock"


def test_container_state_and_absent_containers():
    docker, _ = cli({f"docker inspect --type container --format {{{{json .State}}}} {CID}":
                     state("paused")})  # fmt: skip
    assert docker.state(CID) == ContainerState("paused", 0)
    assert docker.state(CID).alive
    assert not ContainerState("exited", 137).alive
    docker, _ = cli({"docker inspect": Result((), 1, "", "Error: No such container: x")})
    assert docker.state(CID) is None


def test_stop_thaws_a_frozen_container_first_and_skips_a_stopped_one():
    docker, runner = cli({"docker inspect": state("paused")})
    docker.stop(CID, 5.0)
    assert [c.split()[1] for c in runner.commands()] == ["inspect", "unpause", "stop"]
    assert runner.commands()[-1] == f"docker stop --time 5 {CID}"
    docker, runner = cli({"docker inspect": state("exited", 137)})
    docker.stop(CID, 5.0)
    assert [c.split()[1] for c in runner.commands()] == ["inspect"]


def test_kill_thaws_first_and_pause_is_by_id():
    docker, runner = cli({"docker inspect": state("paused")})
    docker.kill(CID)
    assert runner.commands()[-2:] == [f"docker unpause {CID}", f"docker kill {CID}"]
    docker, runner = cli({})
    docker.pause(CID)
    assert runner.commands() == [f"docker pause {CID}"]


def test_remove_accepts_an_absent_container_and_names_other_failures():
    docker, _ = cli({"docker rm": Result((), 1, "", "Error: No such container: abc")})
    docker.remove(CID)
    docker, _ = cli({"docker rm": Result((), 1, "", "Error response from daemon: busy")})
    with pytest.raises(InfraError, match=f"docker rm {CID[:12]} failed: Error response"):
        docker.remove(CID)


def test_create_returns_the_id_and_images_are_looked_up_by_reference():
    docker, runner = cli({"docker create": f"{CID}\n", "docker image inspect": "sha256:feed\n"})
    assert docker.create(["--network", "host", "img"]) == CID
    assert runner.commands()[0] == "docker create --network host img"
    assert docker.image_id("img:1") == "sha256:feed"
    docker, _ = cli({"docker image inspect": Result((), 1, "", "No such image: img:1")})
    assert docker.image_id("img:1") is None
    assert docker.logs_argv(CID) == ["docker", "logs", "--follow", CID]


def test_image_labels_and_load() -> None:
    inspect = "docker image inspect --format {{json .Config.Labels}} mo:1"
    docker, runner = cli({inspect: '{"io.mochaos.recipe": "k1"}\n'})
    assert docker.image_labels("mo:1") == {"io.mochaos.recipe": "k1"}
    docker, _ = cli({inspect: "null\n"})
    assert docker.image_labels("mo:1") == {}
    docker, _ = cli({inspect: Result((), 1, "", "Error: No such image: mo:1")})
    assert docker.image_labels("mo:1") is None
    docker, runner = cli({})
    docker.load(Path("/c/image.tar"))
    assert runner.commands() == ["docker load --input /c/image.tar"]


def test_a_containers_address_on_a_network_and_its_published_port() -> None:
    networks = (
        f"docker inspect --type container --format {{{{json .NetworkSettings.Networks}}}} {CID}"
    )
    docker, _ = cli(
        {
            networks: '{"kind": {"IPAddress": "172.18.0.9"}}',
            f"docker port {CID} 9000/tcp": "127.0.0.1:49153\n",
        }
    )
    assert docker.address(CID, "kind") == "172.18.0.9"
    assert docker.address(CID, "other") == ""
    assert docker.published(CID, 9000) == ("127.0.0.1", 49153)


def test_a_network_is_made_again_with_the_subnet_the_engine_picked() -> None:
    subnet = "docker network inspect --format {{(index .IPAM.Config 0).Subnet}} n1"
    docker, runner = cli({subnet: "172.20.0.0/16\n"})
    assert docker.network_create("n1", labels={"a": "b"}, bridge="mtr1") == "172.20.0.0/16"
    assert runner.commands() == [
        "docker network create --label=a=b --opt=com.docker.network.bridge.name=mtr1 n1",
        subnet,
        "docker network rm n1",
        "docker network create --label=a=b --opt=com.docker.network.bridge.name=mtr1 "
        "--subnet=172.20.0.0/16 n1",
    ]


def test_the_engines_own_reason_is_preferred_to_the_clis_last_line() -> None:
    from mochaos.tooling.docker_cli import daemon_reason

    refused = Result(
        (),
        1,
        "",
        "Error response from daemon: network kind not found\n"
        "Error: failed to start containers: abc\n",
    )
    assert daemon_reason(refused) == "network kind not found"
    assert daemon_reason(Result((), 1, "", "boom\n")) == "boom"
    assert daemon_reason(Result((), 3)) == "exit 3"
