"""The shared webhook host's bookkeeping (host.json, users, attachments) with fake handles:
joined per build, replaced, stopped by the last user; the same for a host process and a host
container. The real-process life cycle is in test_webhook_host.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mochaos.cluster.local import attached
from mochaos.cluster.local.attached import Attached
from mochaos.errors import UsageError
from mochaos.operator.runtime.operator_container import ContainerHost
from mochaos.operator.webhooks import admission as webhooks
from mochaos.operator.webhooks import host as webhook_host
from mochaos.operator.webhooks.host import ProcessHost, WebhookHost
from mochaos.procs import Started, cmdline, start_time, wait_gone


@dataclass
class FakeHost:
    """A host handle that records its stop (a container host, as host.json knows it)."""

    cid: str
    running: bool = True
    stops: list[str] = field(default_factory=list)

    def alive(self) -> bool:
        return self.running

    def stop(self) -> None:
        self.running = False
        self.stops.append(self.cid)

    def record(self) -> dict[str, Any]:
        return {"kind": "container", "id": self.cid, "engine": None}

    def attachment(self, name: str) -> Attached:
        return ContainerHost(self.cid, None).attachment(name)


@pytest.fixture
def hosts(monkeypatch: pytest.MonkeyPatch) -> dict[str, FakeHost]:
    """Every fake host started, by id; host.json's records resolve to them."""
    started: dict[str, FakeHost] = {}
    monkeypatch.setattr(webhook_host, "host_handle", lambda record: started[record["id"]])
    return started


def _host(state: Path, **kw: Any) -> WebhookHost:
    """A host on a free port (never the machine's 9443: a real run may hold it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return WebhookHost(state, port=port, **kw)


def _starter(hosts: dict[str, FakeHost], cid: str):
    def start() -> FakeHost:
        hosts[cid] = FakeHost(cid)
        return hosts[cid]

    return start


def test_a_second_user_of_the_same_build_joins_the_running_host(tmp_path, hosts):
    host = _host(tmp_path, build="image-a")
    assert host.acquire(_starter(hosts, "c1"))["id"] == "c1"
    assert host.acquire(_starter(hosts, "c2"))["id"] == "c1"
    assert list(hosts) == ["c1"]


def test_another_build_replaces_a_host_nobody_uses(tmp_path, hosts):
    _host(tmp_path, build="binary-a").acquire(_starter(hosts, "c1"))
    (tmp_path / "users" / str(os.getpid())).unlink()
    assert _host(tmp_path, build="image-b").acquire(_starter(hosts, "c2"))["id"] == "c2"
    assert hosts["c1"].stops == ["c1"]


def test_another_build_is_refused_while_the_host_has_other_users(tmp_path, hosts):
    _host(tmp_path, build="binary-a").acquire(_starter(hosts, "c1"))
    (tmp_path / "users" / str(os.getpid())).unlink()
    (tmp_path / "users" / "1").write_text(str(start_time(1)))  # pid 1 lives
    with pytest.raises(UsageError, match="operator build binary-a serves the webhooks"):
        _host(tmp_path, build="image-b").acquire(_starter(hosts, "c2"))
    assert hosts["c1"].running


def test_the_last_user_stops_the_host_and_cleans_up(tmp_path, hosts):
    host = _host(tmp_path, build="image-a")
    host.acquire(_starter(hosts, "c1"))
    (tmp_path / "users" / "1").touch()  # another user still there
    cleaned: list[bool] = []
    host.release(lambda: cleaned.append(True))
    assert hosts["c1"].running and not cleaned
    (tmp_path / "users" / "1").unlink()
    host.acquire(_starter(hosts, "c2"))
    host.release(lambda: cleaned.append(True))
    assert hosts["c1"].stops == ["c1"] and cleaned == [True]
    assert not (tmp_path / "host.json").exists()


def test_a_started_host_is_attached_to_its_cluster_until_the_last_user_leaves(tmp_path, hosts):
    cluster_dir = tmp_path / "cluster"
    host = _host(tmp_path / "webhooks", build="image-a", attach_to=cluster_dir)
    host.acquire(_starter(hosts, "c1"))
    (item,) = attached.attached(cluster_dir)
    assert item.name == webhook_host.HOST_NAME and item.stop == ["docker", "rm", "--force", "c1"]
    host.release(lambda: None)
    assert attached.attached(cluster_dir) == []


def test_a_process_host_is_attached_by_pid_and_command_line():
    def attachment(record):
        return webhook_host.host_handle(record).attachment(webhook_host.HOST_NAME)

    item = attachment({"kind": "process", "pid": 42, "argv": ["operator", "-x"], "started": 7})
    assert (item.pid, item.argv, item.started, item.stop) == (42, ["operator", "-x"], 7, None)
    item = attachment({"kind": "container", "id": "c9", "engine": "tcp://h:2375"})
    assert item.stop == ["docker", "rm", "--force", "c9"]
    assert item.env == {"DOCKER_HOST": "tcp://h:2375"}


def test_a_user_whose_pid_was_reused_is_not_counted(tmp_path, hosts):
    _host(tmp_path, build="binary-a").acquire(_starter(hosts, "c1"))
    (tmp_path / "users" / str(os.getpid())).unlink()
    (tmp_path / "users" / "1").write_text(str(start_time(1) + 1))  # pid 1, not that process
    assert _host(tmp_path, build="image-b").acquire(_starter(hosts, "c2"))["id"] == "c2"
    assert hosts["c1"].stops == ["c1"]


def test_a_dead_host_is_started_again(tmp_path, hosts):
    host = _host(tmp_path, build="image-a")
    host.acquire(_starter(hosts, "c1"))
    hosts["c1"].running = False
    assert host.acquire(_starter(hosts, "c2"))["id"] == "c2"


def test_a_process_host_is_known_by_pid_and_command_line_and_stopped_by_its_group():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)  # fmt: skip
    wait_gone(lambda: len(cmdline(proc.pid)) != 3, 10)
    found = Started.of(proc.pid, proc.args)
    handle = ProcessHost(proc.pid, proc.args, found.started)
    assert handle.alive() and not ProcessHost(proc.pid, ["other"], found.started).alive()
    assert not ProcessHost(proc.pid, proc.args, found.started + 1).alive()  # a reused pid
    assert webhook_host.host_handle(handle.record()) == handle
    handle.stop()
    proc.wait(timeout=10)
    assert not handle.alive()


def test_a_taken_webhook_port_is_named_before_a_host_starts():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(UsageError, match=f"port {port} .the operator's webhook port. is in"):
            webhook_host.check_port_free(port)
    webhook_host.check_port_free(port)


def test_the_host_gets_our_certificates():
    assert webhooks.host_args(Path("/c")) == [
        "--webhook-certificate-directory=/c", "--ca-file=caBundle",
    ]  # fmt: skip


def test_configurations_left_without_a_running_host_are_removed_at_a_runs_start(tmp_path, hosts):
    """A host gone while its configurations stayed (every write in a test namespace would be
    refused "connection refused", failing tests that never run the operator): removed."""
    host = _host(tmp_path, build="image-a")
    removed: list[str] = []

    def unregister() -> list[str]:
        removed.append("called")
        return ["MutatingWebhookConfiguration"]

    host.acquire(_starter(hosts, "c1"))
    assert host.orphaned_configurations(unregister) == [] and not removed  # it serves them
    hosts["c1"].running = False
    (line,) = host.orphaned_configurations(unregister)
    assert "MutatingWebhookConfiguration" in line and removed == ["called"]
    assert not (tmp_path / "host.json").exists()
    assert len(host.orphaned_configurations(unregister)) == 1  # no record: still removed


def test_configurations_are_left_alone_while_another_process_holds_the_hosts_lock(tmp_path):
    from filelock import FileLock

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from filelock import FileLock; "
         f"l = FileLock({str(tmp_path / 'lock')!r}); l.acquire(); print('held', flush=True); "
         "time.sleep(30)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        called: list[bool] = []
        assert _host(tmp_path, build="").orphaned_configurations(
            lambda: called.append(True) or ["x"]
        ) == [] and not called  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert FileLock(str(tmp_path / "lock")).acquire(timeout=5)
