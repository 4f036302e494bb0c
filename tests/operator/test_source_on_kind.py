"""source:<checkout> on kind: an image built from the checkout, registered for the provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.errors import UsageError
from mochaos.images import catalog
from mochaos.operator import parse_target
from mochaos.operator.chart_target import SourceChartTarget


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
