"""What the in-cluster targets wait for depends on where they run."""

from __future__ import annotations

from pathlib import Path

from mochaos.kube import Cluster
from mochaos.operator.chart_target import ImageTarget
from mochaos.operator.matrixone.waits import IMAGE_PULL


def _cluster(provider: str) -> Cluster:
    return Cluster(name="c", provider=provider, kubeconfig=Path("/k"), version="v1.36.3")


def test_kinds_nodes_pull_nothing_the_provider_loaded_them_all() -> None:
    target = ImageTarget(ref="r/op:1")
    assert target.timings_on(_cluster("kind")).image_pull == 0.0
    assert target.timings_on(_cluster("existing")).image_pull == IMAGE_PULL
    kind, existing = (target.timings_on(_cluster(p)).scenario_waits() for p in ("kind", "existing"))
    assert kind.teardown == existing.teardown - IMAGE_PULL
