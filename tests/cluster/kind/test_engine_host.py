"""The Docker daemon mo-chaos starts for kind: its command line, and who it leaves alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.cluster.kind import engine_host
from mochaos.cluster.kind.host_facts import HostFacts

OUR_HOST = HostFacts(missing_caps=("CAP_SYS_RESOURCE",), cgroup_version="1")
FULL_HOST = HostFacts(missing_caps=(), cgroup_version="2")


def test_the_shim_is_registered_as_default_runtime_only_where_the_host_lacks_capabilities(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the command line alone: no Docker Engine needed on the machine that runs the unit tier
    monkeypatch.setattr(engine_host.shutil, "which", lambda name: f"/usr/sbin/{name}")
    argv = engine_host.dockerd_command("/usr/sbin/dockerd", OUR_HOST, tmp_path)
    shim = tmp_path / engine_host.RUNTIME_NAME
    assert argv == [
        "/usr/sbin/dockerd", "--pidfile", str(tmp_path / "dockerd.pid"),
        "--add-runtime", f"{engine_host.RUNTIME_NAME}={shim}",
        "--default-runtime", engine_host.RUNTIME_NAME,
    ]  # fmt: skip
    text = shim.read_text()
    assert text.startswith("#!/bin/sh\n")
    assert "MOCHAOS_REAL_RUNC=" in text and "runtime_shim.py" in text
    plain = engine_host.dockerd_command("/usr/sbin/dockerd", FULL_HOST, tmp_path / "full")
    assert plain == ["/usr/sbin/dockerd", "--pidfile", str(tmp_path / "full" / "dockerd.pid")]


def test_up_leaves_a_daemon_that_already_answers_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    monkeypatch.setattr(engine_host, "answers", lambda socket=engine_host.SOCKET: True)
    assert engine_host.up(progress=lines.append, facts=OUR_HOST) is False
    assert "daemon answers on /var/run/docker.sock" in lines[0]


def test_down_stops_nothing_it_did_not_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path))
    lines: list[str] = []
    assert engine_host.down(progress=lines.append) is False
    assert lines == ["Docker engine: no daemon started by mo-chaos is running"]


def test_a_socket_nobody_listens_on_does_not_answer(tmp_path: Path) -> None:
    assert engine_host.answers(tmp_path / "docker.sock") is False
