"""The operator image as a container: the ``docker create`` line, and start / readiness /
restart / kill / pause / stop against a scripted engine (no Docker needed)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
import yaml

from mochaos.errors import InfraError, UsageError
from mochaos.kube import Cluster
from mochaos.operator.runtime.manager_launch import READY_CONTROLLERS, ManagerLaunch
from mochaos.operator.runtime.operator_container import (
    ContainerHost,
    ContainerSpec,
    Mount,
    OperatorContainer,
    manager_container,
    start_container,
)
from mochaos.operator.target import Waits
from mochaos.operator.webhooks import admission as webhooks
from mochaos.operator.webhooks import host as webhook_host
from mochaos.tooling.docker_cli import ContainerState, DockerCli
from mochaos.tooling.runner import RecordingRunner, Result

IMAGE = "mochaos-test/matrixone-operator:2301e3b"


def _cluster(tmp_path: Path) -> Cluster:
    pki = tmp_path / "pki"
    pki.mkdir()
    for name in ("ca.crt", "admin.crt", "admin.key"):
        (pki / name).write_text("x")
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "kwok-c",
        "contexts": [{"name": "kwok-c", "context": {"cluster": "kwok-c", "user": "kwok-c"}}],
        "clusters": [{"name": "kwok-c", "cluster": {
            "server": "https://127.0.0.1:32764", "certificate-authority": str(pki / "ca.crt")}}],
        "users": [{"name": "kwok-c", "user": {"client-certificate": str(pki / "admin.crt"),
                                              "client-key": "pki/admin.key"}}],
    }))  # fmt: skip
    return Cluster("c", "local", kubeconfig, "v1.36.3", state_dir=tmp_path)


def _pairs(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_a_namespace_manager_runs_the_image_like_the_process(tmp_path: Path):
    cluster = _cluster(tmp_path)
    hosts = tmp_path / "doubles" / "hosts"
    hosts.parent.mkdir()
    hosts.write_text("127.0.0.1 localhost\n")
    launch = ManagerLaunch(binary=Path("/manager"), namespace="ns1", workdir=tmp_path / "w",
                           hosts_file=hosts)  # fmt: skip
    argv = manager_container(launch, cluster, image=IMAGE, labels={"namespace": "ns1"})
    argv = argv.create_args()
    assert argv[:6] == ["--network", "host", "--user", f"{os.getuid()}:{os.getgid()}",
                        "--log-driver", "json-file"]  # fmt: skip
    env = dict(e.split("=", 1) for e in _pairs(argv, "--env"))
    assert env["POD_NAMESPACE"] == "ns1" and env["ENABLE_WEBHOOKS"] == "false"
    assert "PATH" not in env  # the image's own PATH
    mounts = _pairs(argv, "--mount")
    work = tmp_path / "w"
    assert mounts == [
        f"type=bind,source={work},target={work}",
        *(f"type=bind,source={tmp_path / 'pki' / n},target={tmp_path / 'pki' / n},readonly"
          for n in ("ca.crt", "admin.crt", "admin.key")),
        f"type=bind,source={hosts},target=/etc/hosts,readonly",
    ]  # fmt: skip
    assert Path(env["KUBECONFIG"]).parent == work
    assert sorted(_pairs(argv, "--label")) == ["mochaos.io/cluster=c", "mochaos.io/namespace=ns1"]
    tail = argv[argv.index("--entrypoint") :]
    assert tail == [
        "--entrypoint", "/manager", IMAGE,
        f"--operator-cfg-directory={work / 'operator-cfg'}",
        f"--metrics-bind-address=127.0.0.1:{launch.metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{launch.probe_port}",
    ]  # fmt: skip
    assert (work / "operator-cfg" / "featureGates").is_file()


def test_the_webhook_host_container_serves_webhooks_with_our_certificates(tmp_path: Path):
    cluster = _cluster(tmp_path)
    certs = tmp_path / "certs"
    launch = ManagerLaunch(binary=Path("/opt/bin/manager"), namespace="mochaos-webhooks",
                           workdir=tmp_path / "host", hosts_file=None, webhooks=True)  # fmt: skip
    spec = manager_container(launch, cluster, image=IMAGE, extra_args=webhooks.host_args(certs),
                             extra_mounts=[Mount(certs, certs)])  # fmt: skip
    argv = spec.create_args()
    assert "ENABLE_WEBHOOKS=true" in _pairs(argv, "--env")
    assert not any("/etc/hosts" in m for m in _pairs(argv, "--mount"))
    assert f"type=bind,source={certs},target={certs},readonly" in _pairs(argv, "--mount")
    assert argv[-2:] == [f"--webhook-certificate-directory={certs}", "--ca-file=caBundle"]
    assert _pairs(argv, "--entrypoint") == ["/opt/bin/manager"]


# -- the lifecycle, against a scripted engine ----------------------------------------------


def _started(controller: str) -> str:
    return json.dumps({"level": "info", "msg": "Starting workers", "controller": controller})


READY = [_started(c) for c in READY_CONTROLLERS]


class ScriptedEngine:
    """Stands in for the docker CLI: each created container prints the next scripted output
    (after ``delay`` seconds) and then runs until stopped, or exits with ``exit_code``."""

    engine = None

    def __init__(self, tmp_path: Path, outputs: list[tuple[list[str], float, int | None]]):
        self.dir = tmp_path / "engine"
        self.dir.mkdir()
        self.outputs = outputs
        self.calls: list[str] = []
        self.states: dict[str, ContainerState] = {}
        self.created = 0

    def create(self, args: list[str]) -> str:
        cid = f"{self.created:02d}" + "f" * 62
        self.created += 1
        self.states[cid] = ContainerState("created", 0)
        self.calls.append("create")
        return cid

    def start(self, cid: str) -> Result:
        lines, delay, exit_code = self.outputs[int(cid[:2])]
        self.states[cid] = ContainerState("running", 0) if exit_code is None else ContainerState(
            "exited", exit_code)  # fmt: skip
        (self.dir / cid).write_text(json.dumps([lines, delay, exit_code is None]))
        self.calls.append(f"start {cid[:2]}")
        return Result((), 0)

    def logs_argv(self, cid: str) -> list[str]:
        script = (
            "import json, os, sys, time\n"
            "lines, delay, runs = json.load(open(sys.argv[1]))\n"
            "time.sleep(delay)\n"
            "print('\\n'.join(lines), flush=True)\n"
            "end = time.monotonic() + 30  # a test that failed midway leaves nothing behind\n"
            "while runs and not os.path.exists(sys.argv[1] + '.stopped') and "
            "time.monotonic() < end:\n"
            "    time.sleep(0.02)\n"
        )
        return [sys.executable, "-c", script, str(self.dir / cid)]

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def state(self, cid: str) -> ContainerState | None:
        return self.states.get(cid)

    def _end(self, cid: str, what: str, code: int) -> None:
        self.calls.append(f"{what} {cid[:2]}")
        if self.states[cid].alive:
            self.states[cid] = ContainerState("exited", code)
        (self.dir / f"{cid}.stopped").touch()

    def stop(self, cid: str, grace: float) -> None:
        self._end(cid, "stop", 0)

    def kill(self, cid: str) -> None:
        self._end(cid, "kill", 137)

    def remove(self, cid: str) -> None:
        self.calls.append(f"rm {cid[:2]}")
        (self.dir / f"{cid}.stopped").touch()
        self.states.pop(cid, None)

    def pause(self, cid: str) -> None:
        self.calls.append(f"pause {cid[:2]}")
        self.states[cid] = ContainerState("paused", 0)

    def unpause(self, cid: str) -> None:
        if self.states[cid].status == "paused":
            self.calls.append(f"unpause {cid[:2]}")
            self.states[cid] = ContainerState("running", 0)


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


def _operator(engine: ScriptedEngine, tmp_path: Path, timeout: float = 10.0) -> OperatorContainer:
    return OperatorContainer(
        docker=engine,  # type: ignore[arg-type]
        spec=_spec(),
        target=f"image:{IMAGE}", version="v", user_agent="manager",
        log_path=tmp_path / "operator.log", ready_timeout=timeout, sessions=None,  # type: ignore[arg-type]
        waits=Waits(),
    )  # fmt: skip


def _registered(state_dir: Path) -> list[str]:
    files = list((state_dir / "runs").glob("*.json"))
    return [c for f in files for c in json.loads(f.read_text()).get("containers", {})]


def test_start_waits_for_the_claim_controllers_and_registers_the_container(tmp_path, state_dir):
    engine = ScriptedEngine(tmp_path, [(["starting", *READY], 0.3, None)])
    op = _operator(engine, tmp_path)
    op.start()
    assert op.log_lines()[-3:] == READY
    assert _registered(state_dir) == [op.container_id]
    op.stop()
    assert engine.calls == ["create", "start 00", "stop 00", "rm 00"]
    assert _registered(state_dir) == [] and op.container_id is None
    op.stop()  # idempotent
    assert engine.calls[-1] == "rm 00"


def test_a_restart_is_a_new_container_and_waits_for_its_own_readiness(tmp_path, state_dir):
    engine = ScriptedEngine(tmp_path, [(READY, 0.0, None), (["again", *READY], 0.5, None)])
    op = _operator(engine, tmp_path)
    op.start()
    try:
        op.restart()
        lines = (tmp_path / "operator.log").read_text().splitlines()
        assert lines.count(READY[0]) == 2 and "again" in lines  # waited for the new container
        assert engine.calls == ["create", "start 00", "stop 00", "rm 00", "create", "start 01"]
    finally:
        op.stop()


def test_a_manager_that_refuses_its_flags_is_a_usage_error(tmp_path, state_dir):
    engine = ScriptedEngine(tmp_path, [(["flag provided but not defined: -x"], 0.0, 2)])
    with pytest.raises(UsageError, match="refused its arguments: flag provided but not"):
        _operator(engine, tmp_path).start()
    assert engine.calls[-1] == "rm 00" and _registered(state_dir) == []


def test_a_manager_that_exits_before_ready_is_an_infrastructure_error(tmp_path, state_dir):
    engine = ScriptedEngine(tmp_path, [(["problem running manager"], 0.0, 1)])
    with pytest.raises(InfraError, match="exited with status 1 before it was ready: problem"):
        _operator(engine, tmp_path).start()


def test_a_manager_never_ready_is_stopped_after_the_timeout(tmp_path, state_dir):
    engine = ScriptedEngine(tmp_path, [(["starting"], 0.0, None)])
    with pytest.raises(InfraError, match="not ready after 1s"):
        _operator(engine, tmp_path, timeout=1.0).start()
    assert engine.calls[-2:] == ["stop 00", "rm 00"]


def test_kill_keeps_the_manager_down_until_restart(tmp_path, state_dir):
    engine = ScriptedEngine(tmp_path, [(READY, 0.0, None), (READY, 0.0, None)])
    op = _operator(engine, tmp_path)
    op.start()
    op.kill()
    cid = op.container_id
    assert engine.calls[-1] == "kill 00" and engine.state(cid) == ContainerState("exited", 137)
    with pytest.raises(InfraError, match=r"cannot pause operator .*: it is not running"):
        op.pause(1.0)
    op.restart()
    assert engine.calls[-4:] == ["stop 00", "rm 00", "create", "start 01"]
    op.stop()


def test_pause_freezes_the_container_and_thaws_it_on_time(tmp_path, state_dir):
    engine = ScriptedEngine(tmp_path, [(READY, 0.0, None)])
    op = _operator(engine, tmp_path)
    op.start()
    op.pause(0.3)
    assert engine.calls[-1] == "pause 00"
    deadline = time.monotonic() + 5
    while engine.calls[-1] != "unpause 00" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert engine.calls[-1] == "unpause 00"
    op.pause(30)
    op.stop()  # cancels the thaw timer; the engine thaws on stop
    assert engine.calls[-3:] == ["pause 00", "stop 00", "rm 00"]


# -- docker create + start ------------------------------------------------------------------


def _spec() -> ContainerSpec:
    return ContainerSpec(image=IMAGE, entrypoint="/manager", args=("--x",), env={}, mounts=())


CID = "ab" * 32


def test_an_image_without_the_manager_names_the_entrypoint_option(state_dir):
    missing = Result((), 127, "", 'Error response from daemon: failed to create shim task: OCI '
                     'runtime create failed: exec: "/manager": stat /manager: no such file or '
                     "directory: unknown\n")  # fmt: skip
    runner = RecordingRunner({"docker create": CID, "docker start": missing})
    with pytest.raises(UsageError) as info:
        start_container(DockerCli(runner=runner), _spec(), what="operator x", reap=True)
    assert "has no /manager" in str(info.value)
    assert str(info.value).endswith("name the manager's path in the image with "
                                    "--operator-entrypoint")  # fmt: skip
    assert runner.commands()[-1] == f"docker rm --force {CID}"
    assert _registered(state_dir) == []


def test_another_refused_start_is_an_infrastructure_error(state_dir):
    refused = Result((), 1, "", "Error response from daemon: cgroups: cannot find cgroup mount\n")
    runner = RecordingRunner({"docker create": CID, "docker start": refused})
    with pytest.raises(InfraError, match="start failed: cgroups: cannot find cgroup mount: see"):
        start_container(DockerCli(runner=runner), _spec(), what="operator x", reap=False)


def test_a_container_webhook_host_is_found_again_from_its_record():
    handle = ContainerHost(CID, "unix:///run/d.sock")
    assert webhook_host.host_handle(handle.record()) == handle
    assert webhook_host.host_handle({"pid": 1, "argv": ["a"]}) == webhook_host.ProcessHost(1, ["a"])
