"""The context guard: with two clusters in one kubeconfig, nothing mo-chaos or the operator
it starts does writes to the cluster of the context that was not allowed.

Two private local clusters A and B are merged into one kubeconfig whose *current* context
is B's (the dangerous default); a scenario runs with ``--mochaos-cluster=existing
--mochaos-context=A --mochaos-allow-context=A`` on the model target. B's apiserver audit
log must show no write at all by anything but B's own control plane, and A's must show
the writes of mo-chaos and the model (so the same reading would have seen them on B).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.observe.audit import WRITE_VERBS, complete_events

from support.child_runs import (
    SHORT_SCENARIO,
    child_env,
    needs_binaries,
    private_cluster_name,
    remove_private_cluster,
)

pytestmark = needs_binaries

OWN_COMPONENTS = {"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"}
"""Programs of a local cluster's own control plane (the user agent up to its first '/')."""


def writers(audit_log: Path, offset: int) -> Counter[str]:
    """User agent program -> write requests, in the audit log past ``offset``."""
    counts: Counter[str] = Counter()
    for event in complete_events(audit_log, offset):
        if event.get("verb") in WRITE_VERBS and event.get("stage") == "ResponseComplete":
            counts[event.get("userAgent", "").split(" ")[0].split("/")[0]] += 1
    return counts


def merged_kubeconfig(contexts: dict[str, Path], *, current: str, path: Path) -> Path:
    """One kubeconfig holding each cluster's single context under a new name."""
    doc: dict = {"apiVersion": "v1", "kind": "Config", "current-context": current,
                 "clusters": [], "users": [], "contexts": []}  # fmt: skip
    for name, source in contexts.items():
        one = yaml.safe_load(source.read_text())
        doc["clusters"] += one["clusters"]
        doc["users"] += one["users"]
        (ctx,) = one["contexts"]
        doc["contexts"].append({"name": name, "context": ctx["context"]})
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def two_clusters() -> Iterator[tuple[LocalProvider, LocalProvider]]:
    names = [private_cluster_name(), private_cluster_name()]
    try:
        providers = tuple(LocalProvider(name=n) for n in names)
        for p in providers:
            p.up()
        yield providers  # type: ignore[misc]
    finally:
        for name in names:
            remove_private_cluster(name)


def test_no_write_reaches_the_cluster_of_a_context_not_allowed(child, two_clusters, tmp_path):
    a, b = two_clusters
    kubeconfig = merged_kubeconfig(
        {"ctx-a": a.kubeconfig_path(), "ctx-b": b.kubeconfig_path()},
        current="ctx-b", path=tmp_path / "kubeconfig",
    )  # fmt: skip
    offsets = {p.cluster_name: p.audit_log().stat().st_size for p in (a, b)}  # type: ignore[union-attr]
    run = child(
        "suites", "-k", SHORT_SCENARIO, "--operator", "model:fixed",
        "--mochaos-cluster=existing", f"--mochaos-kubeconfig={kubeconfig}",
        "--mochaos-context=ctx-a", "--mochaos-allow-context=ctx-a", env=child_env(),
    )  # fmt: skip
    assert run.case(SHORT_SCENARIO).outcome == "passed", run.output[-3000:]

    on_a = writers(a.audit_log(), offsets[a.cluster_name])  # type: ignore[arg-type]
    on_b = writers(b.audit_log(), offsets[b.cluster_name])  # type: ignore[arg-type]
    print(f"writes on A (allowed): {dict(on_a)}\nwrites on B (not allowed): {dict(on_b)}")
    # The reading sees what mo-chaos and the model write...
    assert on_a["mochaos"] > 0 and on_a["matrixone-operator-model"] > 0, on_a
    # ...and none of it, nor anything but B's own control plane, wrote to B.
    assert set(on_b) <= OWN_COMPONENTS, on_b
