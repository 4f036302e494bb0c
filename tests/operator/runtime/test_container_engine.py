"""The operator image as containers on a real Docker engine.

The lifecycle tests run a stand-in manager (``container_standin/main.go``, built with Go at
test time and imported as an image) so they need no operator: start and readiness, what the
container sees (our uid, its environment, the mounted files, the hosts file rewritten in
place), a real freeze, a kill that stays down, a restart, removal by id. The last test runs
the seed scenario on the real operator's image (main, 2301e3b), built at test time from the
manager binary of ``MOCHAOS_OPERATOR_SRC``. Without a reachable engine (CI has none), or
without Go or a checkout, each skips with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tarfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from mochaos.errors import UsageError
from mochaos.kube import Cluster
from mochaos.operator.provenance import checkout as co
from mochaos.operator.runtime.manager_launch import ManagerLaunch
from mochaos.operator.runtime.operator_container import (
    ContainerSpec,
    OperatorContainer,
    manager_container,
)
from mochaos.operator.target import Waits
from mochaos.operator.targets.source import ENV_SOURCE
from mochaos.tooling.docker_cli import DockerCli

from support import polling
from support.docker_skip import docker_or_skip
from support.standins import go_build

STANDIN = Path(__file__).parent / "container_standin" / "main.go"
MAIN = "2301e3b"

wait_until = partial(polling.wait_until, timeout=10.0)


@pytest.fixture(scope="module")
def engine() -> DockerCli:
    """The Docker engine our environment names; skip with its reason when it does not answer."""
    return docker_or_skip()


def import_image(docker: DockerCli, binary: Path, repository: str) -> str:
    """``binary`` as ``/manager`` in an image of its own (``docker import``: no base image,
    no registry), with the operator image's entrypoint and user; tagged by content."""
    tag = hashlib.sha256(binary.read_bytes()).hexdigest()[:12]
    ref = f"{repository}:{tag}"
    if docker.image_id(ref) is not None:
        return ref
    changes = ["--change", 'ENTRYPOINT ["/manager"]', "--change", "USER 65532:65532"]
    proc = subprocess.Popen(
        [docker.path, "import", *changes, "-", ref], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=docker.environment(),
    )  # fmt: skip
    assert proc.stdin is not None
    with tarfile.open(fileobj=proc.stdin, mode="w|") as tar:
        tar.add(binary, arcname="manager")
    _, err = proc.communicate(timeout=300)  # closes stdin: the end of the archive
    assert proc.returncode == 0, err.decode()
    return ref


@pytest.fixture(scope="module")
def standin_image(engine: DockerCli, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The stand-in manager as an image in the engine."""
    out = tmp_path_factory.mktemp("standin") / "manager"
    go_build(str(STANDIN), out, cwd=out.parent)
    return import_image(engine, out, "mochaos-test/standin-manager")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


def _cluster(tmp_path: Path) -> Cluster:
    key = tmp_path / "pki" / "admin.key"
    key.parent.mkdir()
    key.write_text("key")
    key.chmod(0o600)
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}}],
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "c", "user": {"client-key": str(key), "token": "t"}}],
    }))  # fmt: skip
    return Cluster("standin", "local", kubeconfig, "v1.36.3", state_dir=tmp_path)


def _ticks(op: OperatorContainer) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, op.log_lines()) if r.get("msg") == "tick"]


def _operator(engine: DockerCli, spec: ContainerSpec, tmp_path: Path) -> OperatorContainer:
    return OperatorContainer(
        docker=engine, spec=spec, target="image:standin", version="v", user_agent="manager",
        log_path=tmp_path / "operator.log", ready_timeout=30, sessions=None,  # type: ignore[arg-type]
        waits=Waits(),
    )  # fmt: skip


def test_a_manager_container_on_a_real_engine(engine, standin_image, tmp_path, state):
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    launch = ManagerLaunch(
        binary=Path("/manager"), namespace="ns1", workdir=tmp_path / "w", hosts_file=hosts,
        extra_env={"STANDIN_LOOKUP": "pool-discovery.ns1.svc"},
    )  # fmt: skip
    spec = manager_container(launch, _cluster(tmp_path), image=standin_image)
    op = _operator(engine, spec, tmp_path)
    op.start()
    first = op.container_id
    try:
        seen = wait_until(lambda: _ticks(op), "a tick")[-1]
        assert (seen["uid"], seen["namespace"], seen["webhooks"]) == (os.getuid(), "ns1", "false")
        assert seen["kubeconfig"] and seen["config"] and seen["hosts"] == ""
        with hosts.open("a") as fh:  # the MatrixOne double rewrites it in place, same inode
            fh.write("127.0.0.5 pool-discovery.ns1.svc\n")
        wait_until(lambda: _ticks(op)[-1]["hosts"] == "127.0.0.5", "the new name in /etc/hosts")

        op.pause(1.5)
        assert engine.state(first).status == "paused"
        frozen = _ticks(op)[-1]["n"]
        time.sleep(0.8)
        assert _ticks(op)[-1]["n"] == frozen, "a paused manager went on logging"
        wait_until(lambda: engine.state(first).status == "running", "the thaw", timeout=5)
        assert wait_until(lambda: _ticks(op)[-1]["n"] > frozen, "a tick after the thaw")
        assert min(t["n"] for t in _ticks(op) if t["n"] > frozen) == frozen + 1  # same process

        op.kill()
        time.sleep(0.5)
        assert (engine.state(first).status, engine.state(first).exit_code) == ("exited", 137)
        op.restart()
        assert op.container_id != first and engine.state(first) is None
        assert wait_until(lambda: _ticks(op), "a tick of the new container")[0]["n"] == 0
    finally:
        last = op.container_id
        op.stop()
    assert engine.state(last) is None
    assert not list((state / "runs").glob("*.json")), "a removed container stayed registered"


def test_an_image_without_the_entrypoint_names_the_option(engine, standin_image, tmp_path, state):
    launch = ManagerLaunch(binary=Path("/opt/manager"), namespace="ns1", workdir=tmp_path / "w",
                           hosts_file=None)  # fmt: skip
    spec = manager_container(launch, _cluster(tmp_path), image=standin_image)
    with pytest.raises(UsageError, match=r"has no /opt/manager .*--operator-entrypoint"):
        _operator(engine, spec, tmp_path).start()
    assert not list((state / "runs").glob("*.json"))


@pytest.mark.skipif(
    not os.environ.get(ENV_SOURCE),
    reason=f"{ENV_SOURCE} is unset: point it at a matrixone-operator checkout to judge its image",
)
def test_the_operators_image_gives_mains_verdict_on_the_seed_scenario(engine, tmp_path):
    from test_real_operator import failed, run_seed  # this folder's module (pytest's rootdir mode)

    from mochaos.operator.provenance.manager_build import build_manager

    checkout = co.resolve(Path(os.environ[ENV_SOURCE]), MAIN)
    ref = import_image(engine, build_manager(checkout), "mochaos-test/matrixone-operator")
    result = run_seed(tmp_path, "--operator", f"image:{ref}", "--operator-crds", str(checkout.path))
    assert failed(result) >= {
        "finalizer-completes", "no-label-residue", "scalein-skips-migrating", "retry-budget",
    }  # fmt: skip
    assert result["operator_version"].startswith(f"{ref.rsplit(':', 1)[1]}@")
