"""The crash reaper: what a dead run left behind is stopped, and only that.

State files are written by hand into a private state dir, so each case controls
exactly which owner is dead and which pid still runs which command.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos import namespaces, runstate
from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.procs import cmdline

from support.child_runs import dead_pid
from support.polling import wait_until


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private state dir: the reaper sees only this test's files."""
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))
    return tmp_path / "state" / "runs"


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process of ours that would run for a minute."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    wait_until(lambda: len(cmdline(proc.pid)) == 3, timeout=10, what="the sleeper starting")
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def write_state(runs: Path, *, owner: int, owner_cmdline: list[str],
                pids: dict[int, list[str]], namespaces: dict[str, dict]) -> Path:  # fmt: skip
    runs.mkdir(parents=True, exist_ok=True)
    path = runs / f"{owner}.json"
    data = {
        "owner": owner,
        "owner_cmdline": owner_cmdline,
        "pids": {str(p): c for p, c in pids.items()},
        "namespaces": namespaces,
    }
    path.write_text(json.dumps(data))
    return path


def test_a_dead_runs_process_is_stopped_and_its_namespaces_deleted(state, sleeper):
    path = write_state(state, owner=dead_pid(), owner_cmdline=["pytest", "gone"],
                       pids={sleeper.pid: cmdline(sleeper.pid)},
                       namespaces={"mc-stale": {"kubeconfig": "/kubeconfig",
                                                "context": "dev"}})  # fmt: skip
    deleted: list[tuple[str, Path, str | None]] = []
    lines = runstate.reap(lambda ns, kc, ctx: deleted.append((ns, kc, ctx)))
    assert sleeper.wait(timeout=10) == -9
    assert deleted == [("mc-stale", Path("/kubeconfig"), "dev")]
    assert not path.exists()
    assert any(f"stale process {sleeper.pid}" in line for line in lines), lines


def test_a_pid_now_running_another_command_is_left_alone(state, sleeper):
    # The pid was reused by an unrelated process: the command line does not match.
    path = write_state(state, owner=dead_pid(), owner_cmdline=["pytest", "gone"],
                       pids={sleeper.pid: [sys.executable, "-m", "mochaos.model"]},
                       namespaces={})  # fmt: skip
    runstate.reap(lambda ns, kc, ctx: None)
    assert sleeper.poll() is None, "a process that is not ours was killed"
    assert not path.exists()


def test_a_process_a_wrapper_execd_is_reaped_by_its_start_time(state, tmp_path):
    # The real manager runs under `unshare … sh -c 'exec "$@"'`: once started, its command
    # line is the program's, not the one we started (red when the reaper compares them).
    wrapped = [sys.executable, "-c", "import time; time.sleep(60)"]
    command = ["sh", "-c", 'exec "$@"', "sh", *wrapped]
    proc = subprocess.Popen(command)
    try:
        wait_until(lambda: cmdline(proc.pid) == wrapped, timeout=10, what="the exec")
        runstate.register_pid(proc.pid, command)
        owned = state / f"{os.getpid()}.json"
        dead = owned.rename(state / f"{dead_pid()}.json")
        data = json.loads(dead.read_text())
        dead.write_text(json.dumps({**data, "owner": int(dead.stem)}))
        lines = runstate.reap(lambda ns, kc, ctx: None)
        assert proc.wait(timeout=10) == -9, "the wrapped process outlived its dead run"
        assert any(f"stale process {proc.pid}" in line for line in lines), lines
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_a_live_runs_state_is_not_touched(state, sleeper):
    me = os.getpid()
    path = write_state(state, owner=me, owner_cmdline=cmdline(me),
                       pids={sleeper.pid: cmdline(sleeper.pid)},
                       namespaces={"mc-live": {"kubeconfig": "/kubeconfig"}})  # fmt: skip
    deleted: list[str] = []
    assert runstate.reap(lambda ns, kc, ctx: deleted.append(ns)) == []
    assert sleeper.poll() is None
    assert deleted == []
    assert path.exists()


def test_state_follows_register_and_unregister(state):
    me = os.getpid()
    runstate.register_pid(12345, ["x"])
    runstate.register_namespace("mc-a", Path("/kc"))
    data = json.loads((state / f"{me}.json").read_text())
    assert data["owner_cmdline"] == cmdline(me)
    assert data["pids"] == {"12345": {"argv": ["x"], "started": None}}  # no such process
    assert data["namespaces"] == {"mc-a": {"kubeconfig": "/kc", "context": None}}
    runstate.unregister_pid(12345)
    runstate.unregister_namespace("mc-a")
    assert not (state / f"{me}.json").exists(), "an empty state file must go"


def test_the_reaper_never_deletes_a_namespace_mochaos_did_not_label(kube, cluster, state):
    # A state file (corrupt, or from another cluster behind the same kubeconfig) naming a
    # namespace that is not ours: the reaper must leave it alone.
    core = client.CoreV1Api(kube)
    name = f"mc-safety-foreign-{secrets.token_hex(2)}"
    core.create_namespace({"metadata": {"name": name, "labels": {"team": "someone-else"}}})
    try:
        write_state(state, owner=dead_pid(), owner_cmdline=["pytest", "gone"], pids={},
                    namespaces={name: {"kubeconfig": str(cluster.kubeconfig)}})  # fmt: skip

        lines = runstate.reap(namespaces.reap)  # the reaper the fixtures and the sweep use
        ns = core.read_namespace(name)
        assert ns.metadata.deletion_timestamp is None, "a foreign namespace was deleted"
        assert any(f"could not delete stale namespace {name}" in line for line in lines), lines
        assert any(RUN_ID_LABEL in line for line in lines), lines
    finally:
        try:
            core.delete_namespace(name)
        except ApiException as err:
            assert err.status == 404


def test_an_unanswering_apiserver_leaves_the_namespace_for_the_next_run(state):
    path = write_state(state, owner=dead_pid(), owner_cmdline=["pytest", "gone"], pids={},
                       namespaces={"mc-later": {"kubeconfig": "/kc"}})  # fmt: skip

    def unreachable(namespace: str, kubeconfig: Path, context: str | None) -> None:
        raise ConnectionRefusedError("apiserver down")

    for run in range(1, runstate.REAP_ATTEMPTS):
        lines = runstate.reap(unreachable)
        assert lines == [
            "could not delete stale namespace mc-later yet (apiserver down); the next run "
            "tries again"
        ]
        assert json.loads(path.read_text())["namespaces"]["mc-later"]["attempts"] == run
    (last,) = runstate.reap(unreachable)
    assert last.startswith("gave up on stale namespace mc-later after 5 runs")
    assert not path.exists()


def test_a_gone_cluster_is_not_retried(state):
    path = write_state(state, owner=dead_pid(), owner_cmdline=["pytest", "gone"], pids={},
                       namespaces={"mc-gone": {"kubeconfig": "/no/kc"}})  # fmt: skip

    (line,) = runstate.reap(namespaces.reap)
    assert line.startswith("could not delete stale namespace mc-gone: kubeconfig /no/kc not found")
    assert not path.exists()


def test_a_killed_tests_result_is_written_with_the_findings_of_its_finished_teardown(
    state, tmp_path
):
    from mochaos.report.result import ScenarioResult
    from mochaos.report.testreport import write_killed

    folder = tmp_path / "reports" / "run" / "suites.test_x"
    kept = ScenarioResult(nodeid="suites/test_x.py::test_x", outcome="passed").to_dict()
    write_state(state, owner=dead_pid(), owner_cmdline=["pytest", "gone"], pids={},
                namespaces={"mc-x": {"kubeconfig": "/kc", "report": str(folder),
                                     "result": kept}})  # fmt: skip
    finding = "finalizer mochaos.io/hold on Pod/p had to be removed by mo-chaos"
    lines = runstate.reap(lambda ns, kc, ctx: [finding], write_killed)
    assert lines == ["deleted stale namespace mc-x", f"  {finding}"]
    result = json.loads((folder / "result.json").read_text())
    assert result["findings"] == [finding]
    assert (result["outcome"], result["nodeid"]) == ("passed", "suites/test_x.py::test_x")


def test_a_test_killed_before_its_result_was_kept_gets_an_error_result(state, tmp_path):
    from mochaos.report.testreport import write_killed

    folder = tmp_path / "reports" / "run" / "suites.test_y"
    write_state(state, owner=dead_pid(), owner_cmdline=["pytest", "gone"], pids={},
                namespaces={"mc-y": {"kubeconfig": "/kc", "report": str(folder)}})  # fmt: skip
    runstate.reap(lambda ns, kc, ctx: [], write_killed)
    result = json.loads((folder / "result.json").read_text())
    assert (result["outcome"], result["phase"]) == ("error", "killed")
    assert result["message"].startswith("the run was killed before this test ended")


def test_each_item_is_crossed_off_as_soon_as_it_is_done(state, sleeper):
    # The reaper dies while deleting the second namespace: the process and the first
    # namespace are off the file, the second is still on it for the next run.
    path = write_state(state, owner=dead_pid(), owner_cmdline=["pytest", "gone"],
                       pids={sleeper.pid: cmdline(sleeper.pid)},
                       namespaces={"mc-1": {"kubeconfig": "/kc"},
                                   "mc-2": {"kubeconfig": "/kc"}})  # fmt: skip

    class Killed(BaseException):
        """Stands for the reaper's process dying (nothing after it runs)."""

    def delete(namespace: str, kubeconfig: Path, context: str | None) -> None:
        if namespace == "mc-2":
            raise Killed

    with pytest.raises(Killed):
        runstate.reap(delete)
    left = json.loads(path.read_text())
    assert left["pids"] == {} and list(left["namespaces"]) == ["mc-2"], left
    assert sleeper.wait(timeout=10) == -9
    deleted: list[str] = []
    runstate.reap(lambda ns, kc, ctx: deleted.append(ns))
    assert deleted == ["mc-2"]
    assert not path.exists()


def test_a_dead_runs_container_is_removed_by_id_on_its_engine(state, monkeypatch):
    from mochaos.tooling import docker_cli

    removed: list[tuple[str | None, str]] = []

    def remove(self: docker_cli.DockerCli, cid: str) -> None:
        if cid == "bad":
            raise docker_cli.InfraError("docker rm bad failed: engine gone")
        removed.append((self.engine, cid))

    monkeypatch.setattr(docker_cli.DockerCli, "remove", remove)
    path = write_state(state, owner=dead_pid(), owner_cmdline=["pytest", "gone"], pids={},
                       namespaces={})  # fmt: skip
    data = json.loads(path.read_text())
    data["containers"] = {"c0ffee": {"engine": "unix:///run/d.sock"}, "bad": {"engine": None}}
    path.write_text(json.dumps(data))
    lines = runstate.reap(lambda ns, kc, ctx: None)
    assert removed == [("unix:///run/d.sock", "c0ffee")]
    assert "removed stale container c0ffee" in lines
    assert any(line.startswith("could not remove stale container bad") for line in lines)
    assert not path.exists()


def test_a_registered_container_keeps_the_state_file_until_unregistered(state):
    runstate.register_container("c0ffee", None)
    me = os.getpid()
    assert json.loads((state / f"{me}.json").read_text())["containers"] == {
        "c0ffee": {"engine": None}
    }
    runstate.unregister_container("c0ffee")
    assert not (state / f"{me}.json").exists()
