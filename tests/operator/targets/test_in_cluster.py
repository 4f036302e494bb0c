"""What the in-cluster targets wait for depends on where they run."""

from __future__ import annotations

from pathlib import Path

from mochaos.kube import Cluster
from mochaos.matrixone.waits import IMAGE_PULL
from mochaos.operator.target import Waits
from mochaos.operator.targets.chart import ImageTarget, from_spec


def _cluster(provider: str) -> Cluster:
    return Cluster(name="c", provider=provider, kubeconfig=Path("/k"), version="v1.36.3")


def test_kinds_nodes_pull_nothing_the_provider_loaded_them_all() -> None:
    target = ImageTarget(ref="r/op:1")
    assert target.timings_on(_cluster("kind")).image_pull == 0.0
    assert target.timings_on(_cluster("existing")).image_pull == IMAGE_PULL
    kind, existing = (Waits.of(target.timings_on(_cluster(p))) for p in ("kind", "existing"))
    assert kind.teardown == existing.teardown - IMAGE_PULL


def test_kinds_nodes_pulling_through_a_registry_wait_for_the_pull() -> None:
    target = from_spec("r/op:1", {"registry": "local"})
    assert target.timings_on(_cluster("kind")).image_pull == IMAGE_PULL
    assert from_spec("r/op:1", {}).timings_on(_cluster("kind")).image_pull == 0.0
