"""The operator chart from a checkout, its dependency charts vendored from the same checkout."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mochaos.errors import UsageError
from mochaos.operator.provenance.chart_source import checkout_chart
from mochaos.operator.provenance.checkout import Checkout


def _checkout(tmp_path: Path, *, kruise_version: str = "1.4.0") -> Checkout:
    root = tmp_path / "src"
    op = root / "charts" / "matrixone-operator"
    op.mkdir(parents=True)
    (op / "Chart.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v2", "name": "matrixone-operator", "version": "1.3.0-alpha.3",
        "dependencies": [{"name": "kruise", "version": "1.4.0",
                          "repository": "https://matrixorigin.github.io/matrixone-operator"}],
    }))  # fmt: skip
    kruise = root / "charts" / "kruise"
    kruise.mkdir()
    (kruise / "Chart.yaml").write_text(
        yaml.safe_dump({"name": "kruise", "version": kruise_version})
    )
    return Checkout(root, "2301e3b" + "0" * 33, "")


def test_the_dependency_is_copied_into_the_charts_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "cache"))
    chart = checkout_chart(_checkout(tmp_path))
    assert (chart / "Chart.yaml").is_file()
    assert yaml.safe_load((chart / "charts" / "kruise" / "Chart.yaml").read_text())["version"] == (
        "1.4.0"
    )
    (chart / "charts" / "kruise" / "marker").write_text("cached\n")
    assert checkout_chart(Checkout(tmp_path / "src", "2301e3b" + "0" * 33, "")) == chart
    assert (chart / "charts" / "kruise" / "marker").is_file()


def test_a_dependency_of_another_version_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "cache"))
    with pytest.raises(
        UsageError, match=r"chart dependency kruise 1\.4\.0 is not in charts/kruise"
    ):
        checkout_chart(_checkout(tmp_path, kruise_version="1.5.0"))
