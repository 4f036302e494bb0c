"""A private local cluster under its supervisor, with a fake double: what exits comes back.

One cluster for the module (a start costs seconds): a component killed with SIGKILL is
restarted and recorded; a double is prepared, started, health-checked, shown by
``status`` and restarted; a supervisor killed while a component is down is started again
by the next ``up()``, which then finds the cluster whole instead of recreating it.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mochaos.cluster import build, events
from mochaos.cluster.local import COMPONENTS, LocalProvider
from mochaos.doubles import DoubleContext, DoubleSpec
from mochaos.errors import UsageError
from mochaos.procs import cmdline

pytestmark = pytest.mark.skipif(not build.all_built(), reason="local binaries not built")

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


def wait_until(check, *, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := check():
            return got
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout}s")


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
    assert lines[7].split()[:3] == ["double", "fake", "healthy"], lines
    # Red: a double whose health check fails makes the cluster unhealthy, and says why.
    (state / "sick").touch()
    try:
        assert not provider.is_healthy()
        assert "double fake              NOT HEALTHY: told to be sick (pid " in provider.status()
    finally:
        (state / "sick").unlink()
    assert provider.is_healthy()


def test_a_component_killed_with_sigkill_is_restarted_and_recorded(provider):
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
    wait_until(provider.is_healthy, timeout=30, what="the cluster healthy again")


def test_a_double_that_exits_is_restarted_like_a_component(provider):
    ready = provider.cluster_dir / "doubles" / "fake" / "ready"
    pid = int(ready.read_text())
    os.kill(pid, signal.SIGKILL)
    event = wait_until(lambda: restarts(provider, "fake"), timeout=30, what="a restart")[-1]
    assert event.old_pid == pid
    wait_until(lambda: ready.read_text() == str(event.new_pid), timeout=10, what="new pid")
    wait_until(provider.is_healthy, timeout=30, what="the cluster healthy again")


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


def test_a_double_may_not_take_a_components_name(tmp_path: Path):
    bad = DoubleSpec(name="etcd", description="", command=_fake_command, health=_fake_health)
    with pytest.raises(UsageError, match="double name 'etcd' is invalid or taken"):
        LocalProvider(name="mc-sup-never", doubles=[bad])
