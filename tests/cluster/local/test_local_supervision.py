"""A private local cluster under its supervisor, with a fake double: what exits comes back.

One cluster for the module (a start costs seconds): a component killed with SIGKILL is
restarted and recorded; a double is prepared, started, health-checked, shown by
``status`` and restarted; a double whose recorded command is gone (the venv of an earlier
run) or outdated (an upgrade) is started afresh by ``up()``; a supervisor killed while a
component is down is started again
by the next ``up()``, which then finds the cluster whole instead of recreating it; a
kwok-controller started again (alone, or with the whole cluster as after a machine
restart) runs pods at once instead of waiting minutes for its predecessor's node leases.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from mochaos.binaries import control_plane
from mochaos.cluster import events
from mochaos.cluster.local.cluster_dir import COMPONENTS
from mochaos.cluster.local.leases import HELD_BY, KWOK_CONTROLLER
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.cluster.local.processes import ProcessSpec, spawn, write_pid
from mochaos.doubles import DoubleContext, DoubleSpec
from mochaos.errors import UsageError
from mochaos.kube import api_client
from mochaos.procs import cmdline

from support.polling import wait_until

pytestmark = pytest.mark.skipif(not control_plane.all_built(), reason="local binaries not built")

FAKE = """
import os, sys, time
from pathlib import Path
state = Path(sys.argv[1])
(state / "ready").write_text(str(os.getpid()))
while True:
    time.sleep(1)
"""


def _fake_command(ctx: DoubleContext) -> list[str]:
    return [sys.executable, "-c", FAKE, str(ctx.state_dir)]


def _fake_health(ctx: DoubleContext) -> str | None:
    if not ctx.kubeconfig.is_file():
        return "no kubeconfig"
    if (ctx.state_dir / "sick").exists():
        return "told to be sick"
    ready = ctx.state_dir / "ready"
    if not ready.exists() or not cmdline(int(ready.read_text())):
        return "not ready"
    return None


def _fake_prepare(ctx: DoubleContext) -> None:
    with (ctx.state_dir / "prepared").open("a") as fh:
        fh.write("prepared\n")


FAKE_DOUBLE = DoubleSpec(
    name="fake",
    description="a stand-in process for the supervision tests",
    command=_fake_command,
    health=_fake_health,
    prepare=_fake_prepare,
)


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    p = LocalProvider(name=f"mc-sup-{secrets.token_hex(3)}", doubles=[FAKE_DOUBLE])
    try:
        p.up()
        yield p
    finally:
        p.down()
        (p.workdir / f"{p.cluster_name}.lock").unlink(missing_ok=True)


def restarts(p: LocalProvider, component: str) -> list[events.ClusterEvent]:
    return [e for e in events.read(p.events_log()) if e.component == component]


def test_the_double_is_prepared_started_and_healthy(provider):
    state = provider.cluster_dir / "doubles" / "fake"
    assert (state / "prepared").read_text() == "prepared\n"
    assert (provider.cluster_dir / "logs" / "fake.log").exists()
    assert provider.is_healthy()
    lines = provider.status().splitlines()
    assert [ln.split()[0] for ln in lines[1:6]] == list(COMPONENTS)
    assert all("running (pid " in ln for ln in lines[1:6]), lines
    assert lines[6].split()[:3] == ["supervisor", "running", "(pid"], lines
    assert lines[7].split()[:2] == ["environment", "nothing"], lines
    assert lines[8].split()[:3] == ["double", "fake", "healthy"], lines
    # Red: a double whose health check fails makes the cluster unhealthy, and says why.
    (state / "sick").touch()
    try:
        assert not provider.is_healthy()
        assert "double fake              NOT HEALTHY: told to be sick (pid " in provider.status()
    finally:
        (state / "sick").unlink()
    assert provider.is_healthy()


def _leader_lease(p: LocalProvider, component: str) -> tuple[str, str] | None:
    """(uid, holder) of the leader lease ``component`` holds; None while there is none."""
    from kubernetes import client

    namespace, name = HELD_BY[component]
    with api_client(p.kubeconfig_path(), user_agent="mochaos/test") as api:
        try:
            lease = client.CoordinationV1Api(api).read_namespaced_lease(name, namespace)
        except client.ApiException as err:
            if err.status == 404:
                return None
            raise
        return lease.metadata.uid, lease.spec.holder_identity


def test_a_component_killed_with_sigkill_is_restarted_and_recorded(provider):
    uid, holder = wait_until(
        lambda: _leader_lease(provider, "kube-scheduler"), timeout=30, what="a leader"
    )
    pid = provider.running_pids()["kube-scheduler"]
    before = len(restarts(provider, "kube-scheduler"))
    killed_at = time.time()
    os.kill(pid, signal.SIGKILL)
    event = wait_until(
        lambda: restarts(provider, "kube-scheduler")[before:], timeout=30, what="a restart"
    )[0]
    assert event.old_pid == pid and event.event == "restarted"
    assert provider.running_pids()["kube-scheduler"] == event.new_pid
    print(f"restart latency kube-scheduler: {event.t - killed_at:.2f}s")
    # Its predecessor's leader lease was released, not left to expire (15 s unscheduled).
    new_uid, _ = wait_until(
        lambda: (got := _leader_lease(provider, "kube-scheduler")) and got[1] != holder and got,
        timeout=30,
        what="a new leader",
    )
    assert new_uid != uid, "the restarted scheduler waited for its predecessor's lease"
    wait_until(provider.is_healthy, timeout=30, what="the cluster healthy again")


def test_a_double_that_exits_is_restarted_like_a_component(provider):
    ready = provider.cluster_dir / "doubles" / "fake" / "ready"
    pid = int(ready.read_text())
    os.kill(pid, signal.SIGKILL)
    event = wait_until(lambda: restarts(provider, "fake"), timeout=30, what="a restart")[-1]
    assert event.old_pid == pid
    wait_until(lambda: ready.read_text() == str(event.new_pid), timeout=10, what="new pid")
    wait_until(provider.is_healthy, timeout=30, what="the cluster healthy again")


def _fake_pid(p: LocalProvider) -> int:
    return int((p.cluster_dir / "doubles" / "fake" / "ready").read_text())


def _kill_supervisor(p: LocalProvider) -> None:
    supervisor = p.supervision.pid()
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    wait_until(lambda: p.supervision.pid() is None, timeout=10, what="supervisor gone")


def test_a_double_recorded_by_a_gone_run_is_started_afresh(provider):
    # CI's case: the previous run's venv (the double's interpreter) is gone with the machine
    # that ran it; the supervisor cannot start the recorded command. up() starts the double
    # again as this mo-chaos would, instead of waiting for it and failing.
    _kill_supervisor(provider)
    old = _fake_pid(provider)
    os.kill(old, signal.SIGKILL)
    wait_until(lambda: not cmdline(old), timeout=10, what="the double gone")
    table = provider.supervision.table()
    gone = [
        replace(s, argv=["/nonexistent/gone-venv/bin/python3", *s.argv[1:]])
        if s.name == "fake"
        else s
        for s in table
    ]
    provider.supervision.set_table(gone)
    provider.up()
    assert provider.is_healthy()
    (spec,) = (s for s in provider.supervision.table() if s.name == "fake")
    assert spec.argv == _fake_command(provider._double_context(FAKE_DOUBLE))
    assert cmdline(_fake_pid(provider)) == spec.argv


def test_a_double_running_another_command_is_replaced_by_up(provider):
    # After an upgrade (another interpreter, another double binary) the running double is
    # not what this mo-chaos would start: up() stops it and starts the current one.
    ctx = provider._double_context(FAKE_DOUBLE)
    older = ProcessSpec(
        name="fake", argv=[*_fake_command(ctx), "older"], env=dict(os.environ),
        cwd=str(ctx.state_dir), log=str(ctx.log_path),
    )  # fmt: skip
    provider.supervision.hold("fake")
    try:
        os.kill(_fake_pid(provider), signal.SIGKILL)
        proc = spawn(older)
        write_pid(provider.supervision.process_pid_file("fake"), proc.pid)
        provider.supervision.add(older)
        wait_until(lambda: _fake_pid(provider) == proc.pid, timeout=10, what="older running")
    finally:
        provider.supervision.release("fake")
    provider.up()
    assert provider.is_healthy()
    assert proc.wait(timeout=10) is not None, "the older double still runs"
    assert cmdline(_fake_pid(provider)) == _fake_command(ctx)


def test_a_supervisor_killed_midway_is_restarted_by_the_next_up(provider):
    apiserver = provider.running_pids()["kube-apiserver"]
    supervisor = provider.supervision.pid()
    assert supervisor is not None
    # Mid-way: the supervisor is frozen, the controller-manager dies, then the supervisor is
    # killed before it could restart it.
    os.kill(supervisor, signal.SIGSTOP)
    victim = provider.running_pids()["kube-controller-manager"]
    os.kill(victim, signal.SIGKILL)
    os.kill(supervisor, signal.SIGKILL)
    wait_until(lambda: provider.supervision.pid() is None, timeout=10, what="supervisor gone")
    time.sleep(1.0)
    assert "kube-controller-manager" not in provider.running_pids(), "who restarted it?"
    assert not provider.is_healthy()

    provider.up()
    assert provider.supervision.pid() not in (None, supervisor)
    assert provider.running_pids()["kube-apiserver"] == apiserver, "recreated, not recovered"
    (event,) = (e for e in restarts(provider, "kube-controller-manager") if e.old_pid == victim)
    assert provider.running_pids()["kube-controller-manager"] == event.new_pid
    assert provider.is_healthy()


def _pod_runs(p: LocalProvider, name: str, *, timeout: float) -> float:
    """Create a pod in default and return the seconds it took to be Running."""
    from kubernetes import client

    with api_client(p.kubeconfig_path(), user_agent="mochaos/test") as api:
        core = client.CoreV1Api(api)
        body = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
        wait_until(  # a young cluster's controller-manager may not have made it yet
            lambda: core.list_namespaced_service_account("default").items,
            timeout=30,
            what="service account default/default",
        )
        start = time.monotonic()
        core.create_namespaced_pod("default", body)
        try:
            wait_until(
                lambda: core.read_namespaced_pod(name, "default").status.phase == "Running",
                timeout=timeout,
                what=f"pod {name} Running",
            )
            return time.monotonic() - start
        finally:
            core.delete_namespaced_pod(name, "default", grace_period_seconds=0)


def _lease_holders(p: LocalProvider) -> set[str]:
    from kubernetes import client

    with api_client(p.kubeconfig_path(), user_agent="mochaos/test") as api:
        namespace = HELD_BY[KWOK_CONTROLLER][0]
        items = client.CoordinationV1Api(api).list_namespaced_lease(namespace).items
        return {lease.spec.holder_identity for lease in items}


def test_a_restarted_kwok_controller_runs_pods_at_once(provider):
    # Its predecessor's node leases (200 s) would otherwise keep it idle for minutes
    # while every node still reads Ready.
    (before,) = _lease_holders(provider)
    pid = provider.running_pids()[KWOK_CONTROLLER]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: restarts(provider, KWOK_CONTROLLER), timeout=30, what="a restart")
    took = _pod_runs(provider, "after-kwok-restart", timeout=30)
    assert before not in _lease_holders(provider)
    print(f"pod Running {took:.2f}s after kwok-controller's restart")


def test_a_cluster_whose_processes_all_died_runs_pods_once_up_again(provider):
    # What a machine restart leaves: every process gone, the supervisor too; the next up()
    # recovers the cluster and kwok takes the nodes over although the API came back late.
    (before,) = _lease_holders(provider)
    supervisor = provider.supervision.pid()
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    wait_until(lambda: provider.supervision.pid() is None, timeout=10, what="supervisor gone")
    doubles = provider.cluster_dir / "doubles" / "fake" / "ready"
    for pid in [*provider.running_pids().values(), int(doubles.read_text())]:
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not provider.running_pids(), timeout=10, what="every process gone")
    provider.up()
    assert provider.is_healthy()
    took = _pod_runs(provider, "after-machine-restart", timeout=30)
    assert before not in _lease_holders(provider)
    print(f"pod Running {took:.2f}s after the cluster came back")


def test_a_double_may_not_take_a_components_name(tmp_path: Path):
    bad = DoubleSpec(name="etcd", description="", command=_fake_command, health=_fake_health)
    with pytest.raises(UsageError, match="double name 'etcd' is invalid or taken"):
        LocalProvider(name="mc-sup-never", doubles=[bad])
