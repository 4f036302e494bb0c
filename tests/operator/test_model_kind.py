"""The seed scenario on a real kind cluster with ``model:upstream``: no operator checkout
needed, so every ``.ci/run`` runs it (its kind step). It goes through the kind provider,
the offline node image, kubelet running the pool's pods (the nodes' own pause image), the
recorder, the audit log and the reports, and shows that the run leaves no kind cluster.

Needs a Docker engine kind's nodes can run on (``python -m mochaos kind engine up``) and
``MOCHAOS_KIND_E2E=1``: a kind scenario takes most of a 2-core machine, so the main
``pytest tests/ -n 2`` run leaves it to that step and skips it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_real_operator import failed, run_seed  # this folder's module (rootdir mode)

from mochaos.report.junit import read_junit

from support.kind_e2e import containers_labelled, engine_reason, needs_kind_e2e

KIND_NODE_LABEL = "io.x-k8s.kind.cluster"
"""The label kind puts on its node containers, naming their cluster."""

pytestmark = [
    pytest.mark.e2e,  # run_seed runs the suites in a child pytest
    needs_kind_e2e,
]


def _running_pods(history: Path) -> list[dict]:
    """The pods the history saw Running (as the recorder's watch delivered them)."""
    pods = []
    for line in history.read_text().splitlines():
        record = json.loads(line)
        obj = record.get("obj") or {}
        if record.get("kind") == "Pod" and obj.get("status", {}).get("phase") == "Running":
            pods.append(obj)
    return pods


def test_the_model_on_kind_fails_the_seed_race_and_leaves_no_cluster(tmp_path: Path) -> None:
    reason = engine_reason()
    if reason:
        pytest.skip(reason)
    before = containers_labelled(KIND_NODE_LABEL)
    # with workers, as the packaged suites run on kind by default: no worker may delete the
    # cluster the others share, the controller does after them (a run once left it up)
    result = run_seed(tmp_path, "--mochaos-cluster=kind", "--operator", "model:upstream",
                      host_port=False, workers=2)  # fmt: skip
    assert result["cluster_provider"] == "kind"
    (case,) = read_junit(tmp_path / "junit.xml").values()
    assert case.properties["cluster.provider"] == "kind"
    assert failed(result) >= {
        "finalizer-completes", "no-label-residue", "scalein-skips-migrating", "retry-budget",
    }  # fmt: skip
    assert result["max_finalize_retries"] > 10
    # the pool's pods ran on kind's node under kubelet (no kwok there), with a pause image
    running = _running_pods(Path(result["artifacts"]["history"]))
    assert running, "no pod of the pool was seen Running"
    for pod in running:
        (container,) = pod["spec"]["containers"]
        assert pod["spec"]["nodeName"].endswith("-control-plane"), pod["spec"]["nodeName"]
        assert "nodeSelector" not in pod["spec"]
        assert container["image"].rsplit("/", 1)[-1].startswith("pause:"), container["image"]
    # the run deleted the kind cluster it created (docs/kind.md: unless kept)
    assert containers_labelled(KIND_NODE_LABEL) == before
