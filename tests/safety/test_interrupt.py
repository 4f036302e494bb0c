"""Ctrl-C and kill -9 of a running pytest: nothing of the run may outlive it for long.

Ctrl-C (SIGINT) must stop the operator target and delete the namespace at once;
SIGKILL leaves a state file, and the next session reaps what it lists.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.ctrl.objects import GROUP, RUN_ID_LABEL, VERSION
from mochaos.procs import cmdline

from support.child_runs import (
    CHILD,
    ROOT,
    SHORT_SCENARIO,
    child_env,
    needs_binaries,
    pytest_command,
    read_state,
    run_child,
    state_file,
)
from support.polling import wait_until

pytestmark = needs_binaries

START_TIMEOUT = 180.0
"""Seconds for the child to reach its scenario (a cold cluster start included)."""
GONE_TIMEOUT = 90.0
"""Seconds for a deleted namespace to disappear (the namespace controller's pace)."""


@dataclass
class Running:
    """A child pytest caught in the middle of a scenario."""

    proc: subprocess.Popen[bytes]
    operator_pid: int
    operator_cmdline: list[str]
    namespace: str
    log: Path


@pytest.fixture
def mid_scenario(tmp_path: Path, kube) -> Iterator[Running]:
    """A child pytest running the short scenario, once its operator runs and a claim (with
    the operator's finalizer) exists in its namespace."""
    cmd = pytest_command(tmp_path, "suites", "-k", SHORT_SCENARIO, "--operator", "model:fixed",
                         "-s")  # fmt: skip
    with (tmp_path / "child.log").open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env(), stdout=log,
                                stderr=subprocess.STDOUT)  # fmt: skip
    try:
        state = wait_until(
            lambda: (s := read_state(proc.pid)) and operator_of(s) and s.get("namespaces") and s,
            timeout=START_TIMEOUT, what="the child's state file listing operator and namespace",
        )  # fmt: skip
        (pid, entry), (namespace,) = operator_of(state), state["namespaces"]
        command = entry["argv"]
        labels = client.CoreV1Api(kube).read_namespace(namespace).metadata.labels
        assert labels.get(RUN_ID_LABEL), labels
        custom = client.CustomObjectsApi(kube)

        def finalized_claim() -> bool:
            claims = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "cnclaims")
            return any(c["metadata"].get("finalizers") for c in claims["items"])

        wait_until(finalized_claim, timeout=60, what=f"a claim with a finalizer in {namespace}")
        assert cmdline(int(pid)) == command
        yield Running(proc, int(pid), command, namespace, tmp_path / "child.log")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def operator_of(state: dict) -> tuple[str, dict] | None:
    """The operator's (pid, entry) in a state file: the process listed that is not the
    interposer in front of it; None while it is not listed yet."""
    return next(((p, e) for p, e in (state.get("pids") or {}).items()
                 if Path(e["argv"][0]).name != "interposer"), None)  # fmt: skip


def namespace_gone(kube, namespace: str) -> bool:
    try:
        client.CoreV1Api(kube).read_namespace(namespace)
    except ApiException as err:
        return err.status == 404
    return False


def test_ctrl_c_stops_the_operator_and_deletes_the_namespace(mid_scenario: Running, kube):
    run = mid_scenario
    run.proc.send_signal(signal.SIGINT)
    # pytest's "interrupted"
    assert run.proc.wait(timeout=60) == 2, run.log.read_text(errors="replace")[-3000:]
    assert cmdline(run.operator_pid) != run.operator_cmdline, "the operator outlived Ctrl-C"
    assert not state_file(run.proc.pid).exists(), read_state(run.proc.pid)
    wait_until(lambda: namespace_gone(kube, run.namespace), timeout=GONE_TIMEOUT,
               what=f"namespace {run.namespace} disappearing")  # fmt: skip


def test_kill_9_is_cleaned_up_by_the_next_session(mid_scenario: Running, kube, tmp_path):
    run = mid_scenario
    run.proc.send_signal(signal.SIGKILL)
    assert run.proc.wait(timeout=10) == -signal.SIGKILL
    # Nothing could clean up: the operator still runs, the state file says so.
    assert cmdline(run.operator_pid) == run.operator_cmdline
    left = read_state(run.proc.pid)
    listed = {int(p): e["argv"] for p, e in left["pids"].items()}
    assert listed.pop(run.operator_pid) == run.operator_cmdline, left
    # beside it, only the operator's interposer (the operator talks to the apiserver through it)
    assert [Path(argv[0]).name for argv in listed.values()] == ["interposer"], left
    assert all(cmdline(pid) == argv for pid, argv in listed.items()), left
    assert list(left["namespaces"]) == [run.namespace], left

    after = run_child(tmp_path / "next", str(CHILD / "probe_cluster.py"), "-s")
    assert after.exit_code == 0, after.output[-3000:]
    assert cmdline(run.operator_pid) != run.operator_cmdline, "the stale operator still runs"
    for pid, argv in listed.items():
        assert cmdline(pid) != argv, "the stale interposer still runs"
    assert not state_file(run.proc.pid).exists()
    wait_until(lambda: namespace_gone(kube, run.namespace), timeout=GONE_TIMEOUT,
               what=f"stale namespace {run.namespace} disappearing")  # fmt: skip
