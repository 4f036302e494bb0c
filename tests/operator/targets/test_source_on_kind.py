"""source:<checkout> on kind: an image built from the checkout, registered for the provider."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mochaos.errors import UsageError
from mochaos.images import catalog
from mochaos.operator import parse_target
from mochaos.operator.targets.chart import SourceChartTarget


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "operator"
    root.mkdir()
    (root / "go.mod").write_text("module github.com/matrixorigin/matrixone-operator\n")
    return root


def test_on_kind_the_target_is_the_checkouts_image_built_here_never_pulled(tmp_path: Path):
    target = parse_target(f"source:{_checkout(tmp_path)}", {"cluster": "kind"})
    assert isinstance(target, SourceChartTarget)
    assert target.spec == f"source:{tmp_path / 'operator'}"
    assert target.version.startswith("matrixone-operator@unknown")
    assert target.ref.startswith("mochaos.local/matrixone-operator:unknown-")
    assert target.images[0] == target.ref
    builder = catalog.builder_for(target.ref)
    assert builder is not None and builder.pull_first is False


def test_on_an_existing_cluster_it_is_refused_before_any_build(tmp_path: Path):
    with pytest.raises(UsageError, match="its nodes cannot pull an image built here"):
        parse_target(f"source:{_checkout(tmp_path)}", {"cluster": "existing"})


def test_the_runs_settings_reach_the_target(tmp_path: Path):
    # the plugin passes run_id (and the MatrixOne settings) in the options: once, not twice
    target = parse_target(f"source:{_checkout(tmp_path)}", {"cluster": "kind", "run_id": "r1"})
    assert isinstance(target, SourceChartTarget) and target.run_id == "r1"


def test_a_git_url_is_the_same_image_as_the_directory(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))
    tree = _checkout(tmp_path)
    for args in (
        ("init", "-q", "-b", "main"),
        ("add", "."),
        ("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "m"),
    ):
        subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True)
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(tree), str(bare)], check=True)
    options = {"cluster": "kind", "run_id": "r1"}
    by_url = parse_target(f"source:{bare.as_uri()}@main", options)
    by_dir = parse_target(f"source:{bare}@main", options)
    assert isinstance(by_url, SourceChartTarget)
    assert by_url.ref == by_dir.ref and by_url.version == by_dir.version
