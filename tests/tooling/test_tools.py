"""The CLIs we drive: found on PATH with an install hint, versions read and checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.cluster.kind.kind_provider import KIND
from mochaos.errors import InfraError
from mochaos.operator.provenance.helm import HELM
from mochaos.tooling.runner import RecordingRunner
from mochaos.tooling.tools import Tool, check_version, parse_version, require_tool


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
