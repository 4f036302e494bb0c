"""How the double's module is prepared for a MatrixOne version (no Go needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.doubles.matrixone import build
from mochaos.tooling.gomod import replace_lines

MO_GOMOD = """module github.com/matrixorigin/matrixone

go 1.23.0

require github.com/fagongzi/goetty/v2 v2.0.3-0.20230628075727-26c9a2fd5fb8

replace github.com/hashicorp/memberlist => github.com/matrixorigin/memberlist v0.5.1-0.1

replace (
	github.com/fagongzi/goetty/v2 v2.0.3-0.1 => github.com/matrixorigin/goetty/v2 v2.0.0-2 // fork
	github.com/lni/vfs v0.2.1-0.1 => github.com/matrixorigin/vfs v0.2.1-0.2
	github.com/matrixorigin/simdcsv => ./pkg/simdcsv
)
"""


def test_replace_lines_keep_module_replacements_only() -> None:
    assert replace_lines(MO_GOMOD) == [
        "replace github.com/hashicorp/memberlist => github.com/matrixorigin/memberlist v0.5.1-0.1",
        "replace github.com/fagongzi/goetty/v2 v2.0.3-0.1"
        " => github.com/matrixorigin/goetty/v2 v2.0.0-2",
        "replace github.com/lni/vfs v0.2.1-0.1 => github.com/matrixorigin/vfs v0.2.1-0.2",
    ]


def test_pinned_version_is_the_operators_pin() -> None:
    # matrixone-operator main (2301e3b) go.mod requires this MatrixOne.
    assert build.pinned_version() == "v0.7.1-0.20241008071244-fa8af5c4dad4"


def test_pinned_version_builds_from_the_committed_module(tmp_path: Path) -> None:
    assert build.prepare_module(tmp_path, build.pinned_version(), None) == []
    assert (tmp_path / "go.mod").read_text() == (build.GO_MODULE / "go.mod").read_text()
    assert (tmp_path / "go.sum").is_file()
    assert not list(tmp_path.glob("*_test.go"))


def test_other_version_requires_it_with_its_replaces(tmp_path: Path) -> None:
    steps = build.prepare_module(tmp_path, "v9.9.9", MO_GOMOD)
    assert steps == [["mod", "tidy"]]
    gomod = (tmp_path / "go.mod").read_text()
    assert "require github.com/matrixorigin/matrixone v9.9.9" in gomod
    assert build.pinned_version() not in gomod
    assert "github.com/matrixorigin/goetty/v2 v2.0.0-2" in gomod
    assert "./pkg/simdcsv" not in gomod
    assert not (tmp_path / "go.sum").exists()
    with pytest.raises(ValueError, match=r"needs its go\.mod"):
        build.prepare_module(tmp_path, "v9.9.9", None)


def test_recipe_changes_with_the_sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for src in build.GO_MODULE.iterdir():
        if src.is_file():
            (tmp_path / src.name).write_bytes(src.read_bytes())
    monkeypatch.setattr(build, "GO_MODULE", tmp_path)
    before = build.recipe()
    (tmp_path / "main.go").write_text((tmp_path / "main.go").read_text() + "\n// changed\n")
    assert build.recipe() != before
    (tmp_path / "double_test.go").write_text("package main\n")
    after = build.recipe()
    (tmp_path / "double_test.go").write_text("package main // edited test\n")
    assert build.recipe() == after, "tests are not part of the binary"


def test_the_double_component_is_the_pinned_build() -> None:
    c = build.component()
    assert (c.version, c.binaries) == (build.pinned_version(), (build.BINARY,))
    assert c.directory.name == f"matrixone-double-{build.pinned_version()}"


def test_build_env_keeps_the_users_nosumdb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GONOSUMDB", "example.com/private")
    assert build.build_env() == {"GONOSUMDB": "example.com/private,github.com/matrixorigin"}
    monkeypatch.delenv("GONOSUMDB")
    assert build.build_env() == {"GONOSUMDB": "github.com/matrixorigin"}
