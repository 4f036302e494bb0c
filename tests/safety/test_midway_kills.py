"""Killed in the middle of their work, the reaper and the namespace teardown leave the rest
to the next run, which finishes the job and reports what it had to force.

Both leave a namespace Terminating behind a finalizer no controller releases (a pod's),
kill the process with SIGKILL while it waits for the namespace, and start a fresh session
(the shortest test that uses the cluster), whose reaper must end it. Every session on the
machine reaps the dead runs of its state folder, so these runs get a state folder of their
own (``isolated_cluster``): a session another test starts meanwhile cannot reap first. The
supervisor's own kill test is in tests/cluster/test_local_supervision.py.
"""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.kube import new_api_client
from mochaos.paths import state_dir
from mochaos.procs import cmdline
from mochaos.report.result import ScenarioResult
from mochaos.report.summary import write_result

from .child.stuck_teardown import HOLD, held_pod
from support.child_runs import (
    CHILD,
    ROOT,
    child_env,
    dead_pid,
    needs_binaries,
    pytest_command,
    read_state,
    run_child,
)
from support.polling import wait_until

pytestmark = needs_binaries

FINDING = f"finalizer {HOLD} on Pod/held had to be removed by mo-chaos"
START_TIMEOUT = 120.0


def terminating(kube, namespace: str) -> bool:
    try:
        return client.CoreV1Api(kube).read_namespace(namespace).metadata.deletion_timestamp
    except ApiException as err:
        assert err.status == 404, err
        return False


def gone(kube, namespace: str) -> bool:
    try:
        client.CoreV1Api(kube).read_namespace(namespace)
    except ApiException as err:
        return err.status == 404
    return False


def isolated(isolated_cluster: dict[str, str], monkeypatch) -> dict[str, str]:
    """The children's environment; this process reads and plants run records in their
    state folder too."""
    monkeypatch.setenv("MOCHAOS_STATE", isolated_cluster["MOCHAOS_STATE"])
    return child_env(**isolated_cluster)


def next_session(tmp_path: Path, env: dict[str, str]) -> str:
    """A fresh session (its cluster fixture reaps); its output."""
    after = run_child(tmp_path / "next", str(CHILD / "probe_cluster.py"), "-s", env=env)
    assert after.exit_code == 0, after.output[-3000:]
    return after.output


def test_a_reaper_killed_midway_leaves_the_rest_to_the_next_run(
    kube, cluster, tmp_path, isolated_cluster, monkeypatch
):
    env = isolated(isolated_cluster, monkeypatch)
    core = client.CoreV1Api(kube)
    namespace = f"mc-reap-midway-{secrets.token_hex(2)}"
    core.create_namespace({"metadata": {"name": namespace, "labels": {RUN_ID_LABEL: "dead"}}})
    wait_until(lambda: core.list_namespaced_service_account(namespace).items, timeout=20,
               what="the default service account")  # fmt: skip
    core.create_namespaced_pod(namespace, held_pod("held"))
    stale = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    wait_until(lambda: len(cmdline(stale.pid)) == 3, timeout=10, what="the stale process")
    report = tmp_path / "reports" / "run" / "suites.test_dead"
    write_result(report, ScenarioResult(nodeid="suites/test_dead.py::test", outcome="passed"))
    owner = dead_pid()
    runs = state_dir() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    planted = runs / f"{owner}.json"
    planted.write_text(json.dumps({
        "owner": owner, "owner_cmdline": ["pytest", "killed"],
        "pids": {str(stale.pid): cmdline(stale.pid)},
        "namespaces": {namespace: {"kubeconfig": str(cluster.kubeconfig),
                                   "context": cluster.context, "report": str(report)}},
    }))  # fmt: skip
    try:
        cmd = pytest_command(tmp_path / "first", str(CHILD / "probe_cluster.py"), "-s")
        reaper = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.STDOUT)  # fmt: skip
        try:
            # Mid-way: the stale process is stopped, the namespace deletion asked for, and
            # the reaper waits for a namespace that cannot go.
            wait_until(lambda: terminating(kube, namespace), timeout=START_TIMEOUT,
                       what="the reaper deleting the namespace")  # fmt: skip
            reaper.send_signal(signal.SIGKILL)
            assert reaper.wait(timeout=10) == -signal.SIGKILL
        finally:
            if reaper.poll() is None:
                reaper.kill()
        assert stale.wait(timeout=10) == -signal.SIGKILL
        left = json.loads(planted.read_text())
        assert left["pids"] == {}, "the stopped process was not crossed off"
        assert list(left["namespaces"]) == [namespace], "the unfinished namespace was lost"

        output = next_session(tmp_path, env)
        assert f"deleted stale namespace {namespace}" in output, output[-3000:]
        assert FINDING in output, output[-3000:]
        wait_until(lambda: gone(kube, namespace), timeout=60, what="the namespace going")
        assert not planted.exists()
        assert json.loads((report / "result.json").read_text())["findings"] == [FINDING]
    finally:
        planted.unlink(missing_ok=True)
        if stale.poll() is None:
            stale.kill()
        stale.wait()
        _release(kube, namespace)


def test_a_teardown_killed_midway_is_finished_by_the_next_run(
    tmp_path, isolated_cluster, monkeypatch
):
    env = isolated(isolated_cluster, monkeypatch)
    cmd = pytest_command(tmp_path, str(CHILD / "stuck_teardown.py"), "--operator",
                         "model:fixed")  # fmt: skip
    with (tmp_path / "child.log").open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT)  # fmt: skip
    namespace = ""
    kube = None
    try:
        state = wait_until(lambda: (s := read_state(proc.pid)) and s.get("namespaces") and s,
                           timeout=START_TIMEOUT, what="the child's namespace")  # fmt: skip
        ((namespace, where),) = state["namespaces"].items()
        kube = new_api_client(Path(where["kubeconfig"]), user_agent="mochaos/test")
        report = Path(where["report"])
        # Mid-way: the scenario's result is made and kept with the namespace's record, the
        # namespace is being deleted and the teardown waits for it (the held pod never goes
        # by itself); result.json is written once, when the teardown is over.
        wait_until(lambda: _kept(proc.pid, namespace) == "passed" and terminating(kube, namespace),
                   timeout=START_TIMEOUT, what="the teardown deleting the namespace")  # fmt: skip
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert list(read_state(proc.pid)["namespaces"]) == [namespace]
        assert not (report / "result.json").exists()

        output = next_session(tmp_path, env)
        assert f"deleted stale namespace {namespace}" in output, output[-3000:]
        wait_until(lambda: gone(kube, namespace), timeout=60, what="the namespace going")
        result = json.loads((report / "result.json").read_text())
        assert result["findings"] == [FINDING], result
        assert result["outcome"] == "passed"
        assert not read_state(proc.pid)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if kube is not None:
            _release(kube, namespace)
            kube.close()


def _kept(pid: int, namespace: str) -> str | None:
    """The outcome of the result a run keeps with its namespace's record (None: none yet)."""
    kept = (read_state(pid).get("namespaces") or {}).get(namespace, {}).get("result")
    return None if kept is None else kept["outcome"]


def _release(kube, namespace: str) -> None:
    """Whatever happened, leave no held pod behind."""
    try:
        client.CoreV1Api(kube).patch_namespaced_pod(
            "held", namespace, {"metadata": {"finalizers": None}}
        )
    except ApiException as err:
        if err.status != 404:
            raise
