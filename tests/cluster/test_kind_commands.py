"""The command runner, tool checks, waits and manifest rendering behind the kind path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mochaos.cluster.commands import (
    RecordingRunner,
    Result,
    SubprocessRunner,
    Tool,
    check_version,
    parse_version,
    reason,
    render_manifest,
    require_tool,
    wait_for,
)
from mochaos.cluster.kind import KIND
from mochaos.errors import EXIT_INFRA, EXIT_USAGE, InfraError, UsageError
from mochaos.operator.helm import HELM

PY = sys.executable


def test_subprocess_runner_returns_stdout_and_streams_stderr(tmp_path: Path) -> None:
    seen: list[str] = []
    runner = SubprocessRunner(progress=seen.append, log_path=tmp_path / "cmd.log")
    script = "import sys; print('out-line'); print('step 1', file=sys.stderr)"
    result = runner([PY, "-c", script], what="demo")
    assert result.returncode == 0
    assert result.stdout == "out-line\n"
    assert seen == ["step 1"]
    assert "out-line" in (tmp_path / "cmd.log").read_text()


def test_subprocess_runner_echoes_stdout_only_when_asked() -> None:
    seen: list[str] = []
    runner = SubprocessRunner(progress=seen.append)
    runner([PY, "-c", "print('helm says')"], what="demo", echo_stdout=True)
    assert seen == ["helm says"]


def test_subprocess_runner_failure_is_one_line_infra_error() -> None:
    runner = SubprocessRunner(progress=None)
    script = "import sys; print('noise', file=sys.stderr); print('ERROR: the reason', file=sys.stderr); sys.exit(4)"  # noqa: E501
    with pytest.raises(InfraError) as info:
        runner([PY, "-c", script], what="kind create cluster x", hint="do this")
    assert str(info.value) == "kind create cluster x failed (exit 4): the reason: do this"
    assert info.value.exit_code == EXIT_INFRA
    assert "\n" not in str(info.value)


def test_subprocess_runner_without_check_returns_the_failure() -> None:
    result = SubprocessRunner(progress=None)(
        [PY, "-c", "raise SystemExit(2)"], what="x", check=False
    )
    assert result.returncode == 2


def test_subprocess_runner_passes_extra_environment() -> None:
    runner = SubprocessRunner(progress=None, env={"MOCHAOS_PROBE": "42"})
    script = "import os; print(os.environ['MOCHAOS_PROBE'], 'PATH' in os.environ)"
    assert runner([PY, "-c", script], what="x").stdout.split() == ["42", "True"]


def test_subprocess_runner_kills_a_command_that_overruns() -> None:
    runner = SubprocessRunner(progress=None)
    with pytest.raises(InfraError, match=r"^slow step timed out after 0s"):
        runner([PY, "-c", "import time; time.sleep(30)"], what="slow step", timeout=0.2)


def test_subprocess_runner_reports_a_missing_program() -> None:
    with pytest.raises(InfraError, match="could not start"):
        SubprocessRunner(progress=None)(["/nonexistent/kind"], what="kind version")


def test_reason_is_the_last_line_without_kinds_prefixes() -> None:
    res = Result(("kind",), 1, "", "ERROR: failed to list\n\nCommand Output: Cannot connect\n")
    assert reason(res) == "Cannot connect"
    assert reason(Result(("helm",), 1, "", "Error: UPGRADE FAILED: timed out\n")) == (
        "UPGRADE FAILED: timed out"
    )
    assert reason(Result(("x",), 1)) == "no output"


def test_recording_runner_matches_the_longest_prefix_and_records() -> None:
    runner = RecordingRunner(
        {
            "kind get": "generic\n",
            "kind get clusters": "mochaos\n",
            "kind delete": Result(("kind",), 1, "", "ERROR: nope"),
        }
    )
    assert runner(["/opt/bin/kind", "get", "clusters"], what="x").stdout == "mochaos\n"
    assert runner(["kind", "get", "kubeconfig"], what="x").stdout == "generic\n"
    assert runner(["kind", "load"], what="x").stdout == ""
    with pytest.raises(InfraError, match=r"^kind delete failed \(exit 1\): nope$"):
        runner(["kind", "delete", "cluster"], what="kind delete")
    assert runner.commands() == [
        "kind get clusters",
        "kind get kubeconfig",
        "kind load",
        "kind delete cluster",
    ]


def test_require_tool_names_the_install_command_when_missing(tmp_path: Path) -> None:
    with pytest.raises(InfraError) as info:
        require_tool(KIND, search_path=str(tmp_path))
    assert str(info.value) == (
        "kind not found on PATH: install it with `go install sigs.k8s.io/kind@v0.33.0`"
    )
    with pytest.raises(InfraError, match=r"^helm not found on PATH: install it with `go install"):
        require_tool(HELM, search_path=str(tmp_path))


def test_require_tool_finds_an_executable(tmp_path: Path) -> None:
    tool = tmp_path / "kind"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert require_tool(KIND, search_path=str(tmp_path)) == str(tool)


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("kind v0.33.0 go1.26.8 linux/amd64", (0, 33, 0)),
        ("v3.22.0+g1234abc", (3, 22, 0)),
        ("v3.22", (3, 22, 0)),
        ("28.2.2", (28, 2, 2)),
        ("no digits", None),
    ],
)
def test_parse_version(text: str, version: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == version


def test_check_version_accepts_new_and_refuses_old() -> None:
    new = RecordingRunner({"kind version": "kind v0.33.0 go1.26.8 linux/amd64\n"})
    assert check_version(KIND, "kind", runner=new) == (0, 33, 0)
    old = RecordingRunner({"kind version": "kind v0.20.0 go1.20 linux/amd64\n"})
    with pytest.raises(InfraError) as info:
        check_version(KIND, "kind", runner=old)
    assert str(info.value) == (
        "kind 0.20.0 is too old (the pinned node image is built for kind v0.33.0): "
        "install kind >= 0.33.0 with `go install sigs.k8s.io/kind@v0.33.0`"
    )
    helm_old = RecordingRunner({"helm version --short": "v3.7.2+g663a896\n"})
    with pytest.raises(InfraError, match=r"^helm 3\.7\.2 is too old"):
        check_version(HELM, "helm", runner=helm_old)


def test_check_version_refuses_unreadable_output() -> None:
    tool = Tool("odd", (1, 0, 0), "why", "`apt-get install odd`", ("--version",))
    with pytest.raises(InfraError, match="cannot read the version of odd"):
        check_version(tool, "odd", runner=RecordingRunner({"odd --version": "???"}))


def test_wait_for_returns_once_the_check_passes() -> None:
    answers = iter([(False, "0/1"), (False, "0/1"), (True, "1/1")])
    assert wait_for(lambda: next(answers), what="x", timeout=30, interval=0.01) == "1/1"


def test_wait_for_gives_the_last_state_it_saw_when_it_gives_up() -> None:
    def never() -> tuple[bool, str]:
        return False, "2/3 nodes Ready"

    with pytest.raises(InfraError) as info:
        wait_for(never, what="kind cluster x", timeout=0.1, interval=0.02, hint="look at logs")
    text = str(info.value)
    assert text.startswith("kind cluster x not ready after ")
    assert text.endswith(": 2/3 nodes Ready: look at logs")


def test_wait_for_treats_an_api_error_as_not_yet() -> None:
    calls = iter([ConnectionError("refused\nmore"), (True, "up")])

    def check() -> tuple[bool, str]:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    assert wait_for(check, what="x", timeout=30, interval=0.01) == "up"


def test_render_manifest_fills_values_and_names_a_missing_one(tmp_path: Path) -> None:
    template = tmp_path / "t.yaml"
    template.write_text('a: "${x}"\ncost: "$$5"\n---\nb: ${n}\n')
    assert render_manifest(template, {"x": "one", "n": 2}) == [{"a": "one", "cost": "$5"}, {"b": 2}]
    with pytest.raises(UsageError) as info:
        render_manifest(template, {"x": "one"})
    assert str(info.value) == "manifest t.yaml needs a value for ${n}: pass it to the renderer"
    assert info.value.exit_code == EXIT_USAGE
