"""Bad input: one line saying what is wrong and what to do, never a failure. Settings are
checked before any test (pytest's usage-error status 4); what only shows once the run
works (an apiserver, a build, a port) is a test error naming the phase it happened in.
``qualify`` exits 2 for a bad target and 3 when the runs themselves error.

Each case runs the shortest suite scenario in a child pytest, as a user would.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from mochaos import exits
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.errors import InfraError
from mochaos.operator.runtime.process import OperatorProcess
from mochaos.operator.target import Waits
from mochaos.procs import cmdline

from support.child_runs import (
    ROOT,
    SHORT_SCENARIO,
    ChildRun,
    child_env,
    needs_binaries,
    private_cluster_name,
    remove_private_cluster,
)
from support.polling import wait_until

USAGE = "mo-chaos usage error in phase '"
INFRA = "mo-chaos infrastructure error in phase '"
PYTEST_USAGE = 4
"""pytest's exit status for a usage error (bad options, found before any test)."""


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port something is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig with one context, ``dead``, pointing at ``server``."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "dead",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
                "contexts": [{"name": "dead", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


def path_without_go() -> str:
    """$PATH minus every directory holding a ``go`` executable."""
    dirs = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(d for d in dirs if not os.access(Path(d) / "go", os.X_OK))


def one_line_error(run: ChildRun, kind: str, *needles: str) -> str:
    """Assert the scenario is a JUnit error whose whole message is one line starting with
    ``kind`` and containing ``needles``; return that line."""
    case = run.case(SHORT_SCENARIO)
    assert case.outcome == "error", (case, run.output[-2000:])
    lines = case.text.strip().splitlines()
    assert len(lines) == 1, case.text
    line = lines[0]
    assert line.startswith(kind), line
    assert case.message == f'failed on setup with "{line}"', case.message
    for needle in needles:
        assert needle in line, (needle, line)
    # "what is wrong: what to do": a hint after the reason.
    assert ": " in line.removeprefix(kind).split("': ", 1)[1], line
    assert run.exit_code == exits.INFRA, run.output[-2000:]  # not 1: no operator failed
    return line


def refused_at_start(run: ChildRun, *needles: str) -> str:
    """Assert the run stopped before any test with pytest's usage status and one line."""
    assert run.exit_code == PYTEST_USAGE, run.output[-2000:]
    lines = [ln for ln in run.output.strip().splitlines() if ln.strip()]
    (line,) = [ln for ln in lines if "mo-chaos:" in ln]
    assert line.startswith("ERROR: mo-chaos: "), line
    for needle in needles:
        assert needle in line, (needle, line)
    assert ": " in line.removeprefix("ERROR: mo-chaos: "), line
    return line


def suites(child, *args: str, env: dict[str, str] | None = None) -> ChildRun:
    return child("suites", "-k", SHORT_SCENARIO, *args, env=env)


def test_unknown_operator_scheme(child):
    run = suites(child, "--operator=foo:bar")
    refused_at_start(run, "unknown operator target 'foo:bar'", "use model:<profile>")


def test_model_profile_that_does_not_exist(child):
    run = suites(child, "--operator=model:nope")
    refused_at_start(run, "unknown model profile 'nope'", "use model:")


def test_a_setting_from_the_environment_is_checked_too(child):
    run = suites(child, env=child_env(MOCHAOS_FINALIZE_TIMEOUT="soon"))
    refused_at_start(run, "MOCHAOS_FINALIZE_TIMEOUT='soon'")


def test_the_time_scale_is_refused_for_a_real_operator(child, tmp_path):
    binary = tmp_path / "manager"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    run = suites(child, f"--operator=binary:{binary}", f"--operator-crds={tmp_path}",
                 "--time-scale=0.5")  # fmt: skip
    refused_at_start(run, "intervals are compiled in", "drop --time-scale")


def test_missing_kubeconfig(child, tmp_path):
    missing = tmp_path / "no-such-kubeconfig"
    run = suites(
        child,
        "--mochaos-cluster=existing",
        f"--mochaos-kubeconfig={missing}",
        "--mochaos-allow-context=dead",
    )
    refused_at_start(run, f"cannot read kubeconfig {missing}", "pass --mochaos-kubeconfig")


def test_context_missing_from_the_kubeconfig(child, tmp_path, closed_port):
    config = kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{closed_port}")
    run = suites(child, "--mochaos-cluster=existing", f"--mochaos-kubeconfig={config}",
                 "--mochaos-context=ghost", "--mochaos-allow-context=ghost")  # fmt: skip
    refused_at_start(run, "context 'ghost' is not in kubeconfig", "get-contexts")


def test_context_not_allow_listed(child, tmp_path, closed_port):
    config = kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{closed_port}")
    run = suites(child, "--mochaos-cluster=existing", f"--mochaos-kubeconfig={config}")
    refused_at_start(run, "context 'dead' is not allow-listed", "--mochaos-allow-context=dead")


def test_unreachable_apiserver(child, tmp_path, closed_port):
    server = f"https://127.0.0.1:{closed_port}"
    config = kubeconfig(tmp_path / "kubeconfig", server)
    run = suites(
        child,
        "--mochaos-cluster=existing",
        f"--mochaos-kubeconfig={config}",
        "--mochaos-allow-context=dead",
    )
    one_line_error(run, INFRA, f"apiserver {server} unreachable", "check the kubeconfig")


def test_no_go_for_the_first_build(child, tmp_path):
    # MOCHAOS_BINARIES=build: a machine that can download would not need Go at all.
    env = child_env(PATH=path_without_go(), MOCHAOS_CACHE=str(tmp_path / "empty-cache"),
                    MOCHAOS_BINARIES="build")  # fmt: skip
    run = suites(child, env=env)
    one_line_error(run, INFRA, "go not found", "install Go")
    # The same from the command line: one line, non-zero exit.
    proc = subprocess.run([sys.executable, "-m", "mochaos", "cluster", "build"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "mo-chaos: go not found: install Go >= 1.26 and put it on PATH"
    ]


@needs_binaries
def test_apiserver_port_already_taken(child, taken_port):
    name = private_cluster_name()
    env = child_env(MOCHAOS_CLUSTER_NAME=name, MOCHAOS_APISERVER_PORT=str(taken_port))
    try:
        run = suites(child, env=env)
        one_line_error(run, INFRA, f"apiserver port {taken_port} on 127.0.0.1 is already in use",
                       "MOCHAOS_APISERVER_PORT")  # fmt: skip
        assert not LocalProvider(name=name).cluster_dir.exists(), "nothing may be started"
    finally:
        remove_private_cluster(name)


def test_apiserver_port_setting_that_is_not_a_port(child, private_cluster):
    env = child_env(MOCHAOS_CLUSTER_NAME=private_cluster, MOCHAOS_APISERVER_PORT="80a")
    run = suites(child, env=env)
    refused_at_start(run, "MOCHAOS_APISERVER_PORT='80a' is not a TCP port", "unset it")


def test_an_operator_that_never_becomes_ready_is_stopped_and_named(tmp_path):
    pid_file = tmp_path / "operator.pid"
    script = tmp_path / "never-ready"
    script.write_text(f"#!/bin/sh\necho $$ > {pid_file}\necho 'starting, never ready'\n"
                      "exec sleep 600\n")  # fmt: skip
    script.chmod(0o755)
    proc = OperatorProcess(
        target="binary:never-ready", version="v", user_agent="ua", command=[str(script)],
        log_path=tmp_path / "operator.log", ready=lambda p: False, ready_timeout=2,
        sessions=None, waits=Waits(),  # type: ignore[arg-type]
    )  # fmt: skip
    with pytest.raises(InfraError, match="operator binary:never-ready not ready after 2s"):
        proc.start()
    pid = int(pid_file.read_text())
    wait_until(lambda: not cmdline(pid), timeout=10, what=f"the operator (pid {pid}) stopping")


def test_a_bad_operator_ready_timeout_is_a_usage_error(child):
    run = suites(child, env=child_env(MOCHAOS_OPERATOR_READY_TIMEOUT="soon"))
    refused_at_start(run, "MOCHAOS_OPERATOR_READY_TIMEOUT='soon'")


# -- qualify ---------------------------------------------------------------------------


def qualify(tmp_path: Path, operator: str, *pytest_args: str,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    cmd = [
        sys.executable, "-m", "mochaos", "qualify", "--operator", operator, "--repeat", "1",
        "-k", SHORT_SCENARIO, "--reports-dir", str(tmp_path / "qualify"),
        "--", "--time-scale", "0.2", *pytest_args,
    ]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, env=env or child_env(), capture_output=True, text=True,
                          timeout=600)  # fmt: skip


@pytest.mark.parametrize(
    ("operator", "needle"),
    [("foo:bar", "unknown operator target 'foo:bar'"), ("model:nope", "unknown model profile")],
)
def test_qualify_exits_2_on_a_bad_target_before_any_run(tmp_path, operator, needle):
    proc = qualify(tmp_path, operator)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("mo-chaos: ") and needle in line, line
    assert not (tmp_path / "qualify").exists(), "no run may start"


@needs_binaries
def test_qualify_exits_3_when_the_runs_hit_an_infrastructure_error(tmp_path, taken_port):
    name = private_cluster_name()
    env = child_env(MOCHAOS_CLUSTER_NAME=name, MOCHAOS_APISERVER_PORT=str(taken_port))
    try:
        proc = qualify(tmp_path, "model:fixed", env=env)
    finally:
        remove_private_cluster(name)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "1 error" in proc.stdout, proc.stdout


def test_qualify_exits_2_on_bad_input_found_inside_the_runs(tmp_path):
    # A usage error only the child pytest can see (its --kubeconfig): it exits with
    # pytest's usage status (4), which qualify turns into its own (2), by the one table.
    missing = tmp_path / "no-such-kubeconfig"
    proc = qualify(tmp_path, "model:fixed", f"--mochaos-kubeconfig={missing}",
                   "--mochaos-allow-context=dead", "--mochaos-cluster=existing")  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr


def test_a_negative_warm_namespace_count_is_a_usage_error(child):
    run = suites(child, env=child_env(MOCHAOS_WARM_NAMESPACES="-1"))
    refused_at_start(run, "--mochaos-warm-namespaces must be >= 0")


def test_a_registry_is_refused_off_kind_and_when_it_is_no_address(child):
    run = suites(child, "--mochaos-registry=local")
    refused_at_start(run, "--mochaos-registry is for kind's nodes only")
    run = suites(child, "--mochaos-cluster=kind", "--mochaos-registry=ftp://mirror:21")
    assert run.exit_code == PYTEST_USAGE, run.output[-2000:]
    assert "--mochaos-registry: neither 'local' nor a registry address" in run.output
